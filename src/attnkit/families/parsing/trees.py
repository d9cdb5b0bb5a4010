"""Penn Treebank trees: reading bracketed files, the field's preprocessing, and the usual splits.

A `Tree` is a label and its children; a child is a `Tree` or a word (`str`). Words appear only
as the single child of a preterminal, whose label is the POS tag: ``(NN dog)``. The reader takes
PTB ``.mrg`` text (Marcus et al. 1993) with one or several lines per tree and the outer
unlabelled bracket of the NLTK sample, ``( (S ...) )``, which it removes.

`preprocess` does what parsing papers do before training and scoring (and what EVALB does before
counting brackets, EVALB README section 7): strip function tags and co-indices (``NP-SBJ-1`` ->
``NP``, ``NP=2`` -> ``NP``; labels that start with ``-``, such as ``-LRB-`` and ``-NONE-``, stay
intact), remove ``-NONE-`` empty elements and every node left without words.

Splits by file: the NLTK sample (wsj_0001-0199) as train 0001-0179, dev 0180-0189, test
0190-0199; the full WSJ by section (file wsj_SSNN.mrg is section SS) as train 02-21, dev 22,
test 23 (Collins 1997 and every parser since).
"""

from __future__ import annotations

import re
import zipfile
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from attnkit.errors import DataError

EMPTY = "-NONE-"  # the PTB's POS tag of traces and empty elements
_TOKEN = re.compile(r"\(|\)|[^\s()]+")
_FILE_NUMBER = re.compile(r"wsj_(\d{4})")


@dataclass(frozen=True)
class Tree:
    """A constituent: `label` over `children` (Trees, or one word for a preterminal)."""

    label: str
    children: tuple[Tree | str, ...]

    @property
    def is_preterminal(self) -> bool:
        """True for a POS node ``(TAG word)``."""
        return len(self.children) == 1 and isinstance(self.children[0], str)

    def words(self) -> list[str]:
        """The words, left to right."""
        return [word for word, _ in self.tagged()]

    def tags(self) -> list[str]:
        """The POS tags (preterminal labels), left to right."""
        return [tag for _, tag in self.tagged()]

    def tagged(self) -> list[tuple[str, str]]:
        """``(word, tag)`` pairs, left to right."""
        out: list[tuple[str, str]] = []
        stack: list[Tree] = [self]
        while stack:
            node = stack.pop()
            if node.is_preterminal:
                out.append((node.children[0], node.label))  # type: ignore[arg-type]
            else:
                stack.extend(reversed(node.children))  # type: ignore[arg-type]
        return out

    def __str__(self) -> str:
        """One-line PTB brackets, e.g. ``(S (NP (DT the) (NN dog)) (VP (VBZ barks)))``."""
        if self.is_preterminal:
            return f"({self.label} {self.children[0]})"
        return f"({self.label} {' '.join(str(child) for child in self.children)})"


def parse_trees(text: str, source: str = "<string>") -> list[Tree]:
    """Read every bracketed tree in `text` (any layout: one or several lines per tree).

    Args:
        text: PTB bracketed trees, e.g. the contents of a ``.mrg`` file.
        source: Name used in error messages (a file name).

    Returns:
        The trees in order. An outer unlabelled bracket around one tree is removed; one around
        several trees becomes a ``TOP`` node.

    Raises:
        DataError: ``"SOURCE, tree N (line L): ..."`` for unbalanced brackets, an empty bracket,
            text outside brackets, or a node mixing words and brackets (every bracket holds a word
            or brackets, so every tree has words; `preprocess` reports one left without any).
    """
    trees: list[Tree] = []
    for number, (line, tokens) in enumerate(_split_trees(text, source), start=1):
        trees.append(_build(tokens, f"{source}, tree {number} (line {line})"))
    return trees


def _split_trees(text: str, source: str) -> Iterator[tuple[int, list[tuple[str, int]]]]:
    """Yield (first line, tokens with their lines) of each top-level bracket group."""
    depth, tokens, number = 0, [], 0
    for line_no, line in enumerate(text.split("\n"), start=1):
        for match in _TOKEN.finditer(line):
            token = match.group()
            if depth == 0 and token != "(":
                what = "unbalanced ')'" if token == ")" else f"text {token!r} outside brackets"
                raise DataError(f"{source}, tree {number + 1} (line {line_no}): {what}")
            depth += {"(": 1, ")": -1}.get(token, 0)
            tokens.append((token, line_no))
            if depth == 0:
                number += 1
                yield tokens[0][1], tokens
                tokens = []
    if depth:
        raise DataError(f"{source}, tree {number + 1} (line {tokens[0][1]}): unbalanced brackets ({depth} still open at the end of the text)")


def _build(tokens: list[tuple[str, int]], where: str) -> Tree:
    """Build one tree from a balanced token list (an unlabelled root is unwrapped or named TOP)."""
    stack: list[tuple[str | None, list[Tree | str], int]] = []
    root: Tree | None = None
    for i, (token, line) in enumerate(tokens):
        if token == "(":
            label = tokens[i + 1][0]
            stack.append((None if label in ("(", ")") else label, [], line))
        elif token == ")":
            label, children, start = stack.pop()
            node = _node(label, children, f"{where}: bracket opened on line {start}", bool(stack))
            if stack:
                stack[-1][1].append(node)
            else:
                root = node
        elif tokens[i - 1][0] != "(":  # a word (a label right after "(" was taken above)
            stack[-1][1].append(token)
    assert root is not None  # _split_trees yields balanced, non-empty groups
    return root


def _node(label: str | None, children: list[Tree | str], where: str, inner: bool) -> Tree:
    """Check one bracket's contents and make its Tree."""
    if not children:
        raise DataError(f"{where}: empty bracket" + (f" ({label})" if label else ""))
    words = [child for child in children if isinstance(child, str)]
    if words and len(children) > 1:
        raise DataError(f"{where}: ({label} ...) mixes words with brackets or holds several words")
    if label is None:
        if inner or words:
            raise DataError(f"{where}: a bracket without a label")
        if len(children) == 1:
            return children[0]  # type: ignore[return-value]  # NLTK's ( (S ...) )
        label = "TOP"
    return Tree(label, tuple(children))


def read_treebank(path: str | Path, *, suffix: str = ".mrg") -> dict[str, list[Tree]]:
    """Read the trees of a file, of every `suffix` file under a folder, or of those in a zip.

    Args:
        path: A tree file (read whatever its suffix), a folder (searched recursively) or a
            ``.zip`` (e.g. NLTK's ``treebank.zip``: its ``combined/*.mrg`` members).
        suffix: File-name ending of the tree files inside a folder or zip.

    Returns:
        ``{file name: trees}`` in sorted path order; the key is the base name
        (``wsj_0001.mrg``), which the splits read.

    Raises:
        DataError: A missing path, a bad zip, no tree files, invalid UTF-8, a duplicate base
            name, or a malformed tree (file, tree number and line).
    """
    path = Path(path)
    if not path.exists():
        raise DataError(f"{path}: no such file or folder")
    out: dict[str, list[Tree]] = {}
    for name, source, text in _iter_sources(path, suffix):
        if name in out:
            raise DataError(f"{source}: a second file named {name}")
        out[name] = parse_trees(text, source)
    if not out:
        raise DataError(f"{path}: no *{suffix} tree files")
    return out


def read_trees(path: str | Path, *, suffix: str = ".mrg") -> list[Tree]:
    """All trees of `read_treebank(path)`, file after file."""
    return [tree for trees in read_treebank(path, suffix=suffix).values() for tree in trees]


def _iter_sources(path: Path, suffix: str) -> Iterator[tuple[str, str, str]]:
    """Yield (base name, display name, text) for each tree file under `path`."""
    if path.is_dir():
        for file in sorted(p for p in path.rglob(f"*{suffix}") if p.is_file()):
            yield file.name, str(file), _decode(_read_bytes(file), str(file))
    elif zipfile.is_zipfile(path):
        with zipfile.ZipFile(path) as archive:
            for member in sorted(m for m in archive.namelist() if m.endswith(suffix)):
                source = f"{path}:{member}"
                try:
                    data = archive.read(member)
                except (zipfile.BadZipFile, OSError) as err:
                    raise DataError(f"{source}: cannot read ({err})") from err
                yield member.rsplit("/", 1)[-1], source, _decode(data, source)
    else:
        yield path.name, str(path), _decode(_read_bytes(path), str(path))


def _read_bytes(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as err:
        raise DataError(f"{path}: cannot read ({err.strerror or err})") from err


def _decode(data: bytes, source: str) -> str:
    try:
        return data.decode("utf-8-sig")  # a leading byte-order mark is no text, as in every other reader
    except UnicodeDecodeError as err:
        line = data[: err.start].count(b"\n") + 1
        raise DataError(f"{source}, line {line}: invalid UTF-8 (byte 0x{data[err.start]:02x})") from None


def read_tree_file(path: str | Path) -> list[Tree]:
    """The preprocessed trees of one file (errors name the file, the tree and its line)."""
    trees = [preprocess(tree, f"{path}, tree {i}") for i, tree in enumerate(read_trees(path), start=1)]
    if not trees:
        raise DataError(f"{path}: no trees (expected bracketed trees, e.g. (S (NP (DT the) (NN dog)) (VP (VBZ runs))))")
    return trees


def strip_label(label: str) -> str:
    """Drop function tags and co-indices: ``NP-SBJ-1`` -> ``NP``, ``PP-LOC=2`` -> ``PP``.

    The label is cut at its first ``-`` or ``=`` (EVALB README section 7.2); a label that starts
    with ``-`` (``-NONE-``, ``-LRB-``, ``-RRB-``) is returned unchanged.
    """
    if label.startswith("-"):
        return label
    cut = min((i for i in (label.find("-"), label.find("=")) if i > 0), default=len(label))
    return label[:cut]


def preprocess(tree: Tree, where: str = "tree") -> Tree:
    """Strip function tags, remove ``-NONE-`` elements and the nodes they leave empty.

    Args:
        tree: A tree as read.
        where: Names the tree in the error (e.g. ``"wsj_0001.mrg, tree 3"``).

    Returns:
        The cleaned tree (POS tags and words unchanged).

    Raises:
        DataError: Nothing is left (the tree held only empty elements).
    """
    cleaned = _clean(tree)
    if cleaned is None:
        raise DataError(f"{where}: no words left after removing {EMPTY} elements")
    return cleaned


def _clean(tree: Tree) -> Tree | None:
    if tree.is_preterminal:
        return None if tree.label == EMPTY else tree
    kept = (_clean(child) for child in tree.children)  # type: ignore[arg-type]  # never words here
    children = tuple(child for child in kept if child is not None)
    return Tree(strip_label(tree.label), children) if children else None


def preprocess_treebank(files: Mapping[str, list[Tree]]) -> dict[str, list[Tree]]:
    """`preprocess` every tree of `read_treebank`'s result (errors name file and tree)."""
    return {name: [preprocess(tree, f"{name}, tree {i}") for i, tree in enumerate(trees, start=1)] for name, trees in files.items()}


def file_number(name: str) -> int:
    """The NNNN of ``wsj_NNNN.mrg`` (its section is NNNN // 100).

    Raises:
        DataError: The name has no ``wsj_NNNN`` part.
    """
    match = _FILE_NUMBER.search(name)
    if match is None:
        raise DataError(f"{name}: not a WSJ file name (wsj_NNNN.mrg)")
    return int(match.group(1))


def split_sample(files: Mapping[str, list[Tree]]) -> dict[str, list[Tree]]:
    """Train/dev/test of the NLTK 10% sample: wsj_0001-0179 / 0180-0189 / 0190-0199.

    Raises:
        DataError: A file name is not wsj_NNNN or lies outside 0001-0199.
    """
    return _split(files, _sample_part, "wsj_0001-0199")


def _sample_part(number: int) -> str | None:
    if 1 <= number <= 179:
        return "train"
    return "dev" if 180 <= number <= 189 else "test" if 190 <= number <= 199 else None


def split_wsj(files: Mapping[str, list[Tree]]) -> dict[str, list[Tree]]:
    """Train/dev/test of the full WSJ by section: 02-21 / 22 / 23; sections 00, 01, 24 unused."""
    sections = {**{s: "train" for s in range(2, 22)}, 22: "dev", 23: "test"}
    return _split(files, lambda n: sections.get(n // 100, ""), "sections 00-24")


def _split(files: Mapping[str, list[Tree]], part_of: Callable[[int], str | None], expected: str) -> dict[str, list[Tree]]:
    """Group the files' trees by ``part_of(file number)``: None is an error, "" leaves it out."""
    out: dict[str, list[Tree]] = {"train": [], "dev": [], "test": []}
    for name in sorted(files, key=file_number):
        part = part_of(file_number(name))
        if part is None:
            raise DataError(f"{name}: outside {expected}")
        if part:
            out[part].extend(files[name])
    return out


def spans(tree: Tree) -> list[tuple[str, int, int]]:
    """``(label, start, end)`` of every non-preterminal node in pre-order; `end` is exclusive."""
    out: list[tuple[str, int, int]] = []

    def visit(node: Tree, start: int) -> int:
        if node.is_preterminal:
            return start + 1
        slot = len(out)
        out.append((node.label, start, start))
        end = start
        for child in node.children:
            end = visit(child, end)  # type: ignore[arg-type]
        out[slot] = (node.label, start, end)
        return end

    visit(tree, 0)
    return out
