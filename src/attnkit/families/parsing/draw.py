"""A tree as an inline SVG picture (pure Python): labels above, words along the bottom.

Leaves are spaced by their width in characters, a node sits above the middle of its children,
and every level is one row; the result is self-contained markup for a report or a web page.
"""

from __future__ import annotations

from html import escape

from attnkit.families.parsing.trees import Tree

CHAR, ROW, PAD = 7.5, 44, 12  # px per character, per level, around the picture


def tree_svg(tree: Tree) -> str:
    """The SVG markup of `tree` (words at the bottom, POS tags above them, constituents above)."""
    nodes: list[tuple[float, int, str, bool]] = []  # (x, level, text, is word)
    edges: list[tuple[float, int, float, int]] = []
    cursor = [float(PAD)]

    def place(node: Tree, level: int) -> float:
        if node.is_preterminal:
            word = str(node.children[0])
            width = CHAR * max(len(word), len(node.label), 2) + PAD
            x = cursor[0] + width / 2
            cursor[0] += width
            nodes.extend([(x, level, node.label, False), (x, -1, word, True)])
            edges.append((x, level, x, -1))
            return x
        xs = [place(child, level + 1) for child in node.children]  # type: ignore[arg-type]
        x = (xs[0] + xs[-1]) / 2
        nodes.append((x, level, node.label, False))
        edges.extend((x, level, cx, level + 1) for cx in xs)
        return x

    place(tree, 0)
    depth = max(level for _, level, _, _ in nodes) + 1
    y = lambda level: PAD + 14 + ROW * (depth if level < 0 else level)  # noqa: E731 (words on the last row)
    lines = [f'<line x1="{x1:.1f}" y1="{y(l1) + 4:.1f}" x2="{x2:.1f}" y2="{y(l2) - 12:.1f}" stroke="#999"/>'
             for x1, l1, x2, l2 in edges]  # fmt: skip
    style = {True: ' font-style="italic"', False: ' font-weight="bold"'}
    texts = [f'<text x="{x:.1f}" y="{y(level):.1f}" text-anchor="middle"{style[word]}>{escape(text)}</text>' for x, level, text, word in nodes]
    width, height = cursor[0] + PAD, y(-1) + PAD
    return (f'<svg xmlns="http://www.w3.org/2000/svg" class="parse-tree" width="{width:.0f}" height="{height:.0f}" '
            f'viewBox="0 0 {width:.0f} {height:.0f}" font-family="sans-serif" font-size="12">' + "".join(lines + texts) + "</svg>")  # fmt: skip
