"""Trees as labelled span charts, and CKY decoding over span label scores (Kitaev & Klein 2018, sec. 2).

The chart parser scores every span (i, j) of fenceposts 0 <= i < j <= n with every label l:
s(i, j, l), where label 0 is the empty label (no constituent, score fixed at 0) and the others are
the training trees' labels, a unary chain collapsed into one compound label (``S+VP``: the outer
node first). A tree T is a binary bracketing of the words with a label on each of its 2n - 1
spans; its score is s(T) = sum over (i, j, l) in T of s(i, j, l). An n-ary tree is one of the
binary trees whose extra spans carry the empty label (all binarisations score the same), so the
best tree T^ = argmax_T s(T) is found by CKY in O(n^3) (sec. 2.3):

    s_best(i, i+1) = max_l s(i, i+1, l)
    s_best(i, j)   = max_l s(i, j, l) + max_{i<k<j} [s_best(i, k) + s_best(k, j)]

since the label of a span and the split below it are chosen independently. The root span (0, n)
must carry a label (a tree has a root). With `gold` (the gold label of each span, 0 for a span
that is no gold constituent) the search is loss-augmented: every label except the gold one of its
span gets +1, so it finds argmax_T [s(T) + Delta(T, T*)], Delta the Hamming loss of T's labelled
spans against the gold tree's (sec. 2.3, the margin loss).

`gold_spans` turns a tree into its labelled spans; `build_tree` turns a decoded chart back into a
tree over the words: empty-labelled nodes are dissolved into their parents, compound labels
become unary chains, and the words get the given POS tags.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from attnkit.errors import DataError
from attnkit.families.parsing.trees import Tree

JOIN = "+"  # a unary chain's labels in one compound label: ``S+VP``
EMPTY_LABEL = ""  # label 0


def gold_spans(tree: Tree) -> list[tuple[int, int, str]]:
    """``(start, end, label)`` of every constituent above the POS tags, pre-order; a unary chain
    over one span is one compound label (``(S (VP ...))`` -> ``S+VP``), so no two share a span."""
    out: list[tuple[int, int, str]] = []

    def visit(node: Tree, start: int) -> int:
        if node.is_preterminal:
            return start + 1
        chain = [node.label]
        while len(node.children) == 1 and not node.is_preterminal and not node.children[0].is_preterminal:  # type: ignore[union-attr]
            node = node.children[0]  # type: ignore[assignment]
            chain.append(node.label)
        if len(node.children) == 1:  # the chain ends on a word: (NP (NN dog))
            out.append((start, start + 1, JOIN.join(chain)))
            return start + 1
        slot, end = len(out), start
        out.append((start, start, ""))
        for child in node.children:
            end = visit(child, end)  # type: ignore[arg-type]
        out[slot] = (start, end, JOIN.join(chain))
        return end

    visit(tree, 0)
    return out


def gold_chart(n: int, spans: Sequence[tuple[int, int, int]]) -> np.ndarray:
    """(n+1, n+1) int64: the gold label id of each span, 0 (empty) where there is no constituent."""
    chart = np.zeros((n + 1, n + 1), dtype=np.int64)
    for i, j, label in spans:
        chart[i, j] = label
    return chart


@dataclass
class Decoded:
    """The best tree of a chart: its labelled spans (pre-order, 2n - 1 of them, empty labels
    included), its score s(T) (+ the Hamming cost when loss-augmented) and that cost."""

    spans: list[tuple[int, int, int]]
    score: float
    cost: int


def cky(scores: np.ndarray, gold: np.ndarray | None = None) -> Decoded:
    """The best binary labelled tree of one sentence's span scores (module docstring).

    Args:
        scores: (n+1, n+1, L) s(i, j, l) for fenceposts i < j (other cells are ignored); label 0
            is the empty label.
        gold: (n+1, n+1) gold label ids: search argmax s(T) + Delta(T, gold) instead.

    Returns:
        The tree's spans (i, j, label), its (augmented) score and its Hamming cost against `gold`
        (0 without it).
    """
    n, n_labels = scores.shape[0] - 1, scores.shape[2]
    if n < 1:
        raise DataError("a chart needs at least one word")
    scores = scores.astype(np.float64)
    if gold is not None:
        scores = scores + (np.arange(n_labels)[None, None, :] != gold[:, :, None])  # (n+1, n+1, L)
    labels = scores.argmax(axis=-1)  # (n+1, n+1)
    label_score = scores.max(axis=-1)  # (n+1, n+1)
    if n_labels > 1:  # the root carries a label
        labels[0, n] = 1 + scores[0, n, 1:].argmax()
        label_score[0, n] = scores[0, n, labels[0, n]]
    best = np.zeros((n + 1, n + 1))  # s_best(i, j)
    split = np.zeros((n + 1, n + 1), dtype=np.int64)
    starts = np.arange(n)
    best[starts, starts + 1] = label_score[starts, starts + 1]
    for length in range(2, n + 1):
        i = np.arange(n - length + 1)  # (S,) every span of this length at once
        j = i + length
        k = i[:, None] + np.arange(1, length)[None, :]  # (S, length-1) the split points
        totals = best[i[:, None], k] + best[k, j[:, None]]  # (S, length-1)
        pick = totals.argmax(axis=1)  # (S,)
        best[i, j] = label_score[i, j] + totals[np.arange(len(i)), pick]
        split[i, j] = k[np.arange(len(i)), pick]
    spans, stack = [], [(0, n)]
    while stack:
        i, j = stack.pop()
        spans.append((i, j, int(labels[i, j])))
        if j - i > 1:
            stack.extend([(int(split[i, j]), j), (i, int(split[i, j]))])  # left child popped first
    cost = 0 if gold is None else sum(int(label != gold[i, j]) for i, j, label in spans)
    return Decoded(spans, float(best[0, n]), cost)


def build_tree(spans: Sequence[tuple[int, int, int]], labels: Sequence[str], words: Sequence[str], tags: Sequence[str]) -> Tree:
    """The tree of a decoded chart (`cky`'s pre-order spans) over `words` with `tags`.

    Nodes with the empty label are dissolved into their parents, compound labels become unary
    chains (``S+VP`` -> ``(S (VP ...))``); a root without a label (only when there are no labels)
    is ``S``.
    """
    if len(words) != len(tags):
        raise DataError(f"{len(tags)} tags for {len(words)} words")
    by_start = {(i, j): label for i, j, label in spans}
    children_of = _children(spans)

    def visit(i: int, j: int) -> list[Tree]:
        if j - i == 1:
            nodes: list[Tree] = [Tree(tags[i], (words[i],))]
        else:
            nodes = [node for child in children_of[(i, j)] for node in visit(*child)]
        name = labels[by_start[(i, j)]]
        for label in reversed(name.split(JOIN)) if name else ():
            nodes = [Tree(label, tuple(nodes))]
        return nodes

    top = visit(0, len(words))
    return top[0] if len(top) == 1 and not top[0].is_preterminal else Tree("S", tuple(top))


def _children(spans: Sequence[tuple[int, int, int]]) -> dict[tuple[int, int], list[tuple[int, int]]]:
    """The two child spans of each inner span of a pre-order binary tree."""
    out: dict[tuple[int, int], list[tuple[int, int]]] = {}
    stack: list[tuple[int, int]] = []
    for i, j, _ in spans:
        while stack and not (stack[-1][0] <= i and j <= stack[-1][1]):
            stack.pop()
        if stack:
            out.setdefault(stack[-1], []).append((i, j))
        stack.append((i, j))
    return out
