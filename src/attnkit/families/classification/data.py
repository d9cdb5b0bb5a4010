"""Labelled text for sentence classification and entailment: readers, label maps, SST and SNLI.

- `read_labelled`: CSV/TSV (header row with column names), JSONL or JSON (`attnkit.data.tables`),
  plain or ``.gz``; a text column, a label column and, for pairs, a second text column.
- `read_sst_trees` / `read_sst_tsv`: the Stanford Sentiment Treebank (Socher et al., 2013) as
  PTB-style trees (sentences, or every labelled phrase) or as the flat ``__label__K<TAB>text`` file;
  SST-5, or SST-2 (neutral dropped, 0-1 negative, 3-4 positive).
- `read_snli` and `split_by_premise`: SNLI (Bowman et al., 2015) pairs, and a train/dev split in
  which no premise is on both sides.
- `normalize`, `build_vocab`, `encode_examples`, `pad_ids`: lowercase words and punctuation ->
  `WordTokenizer` pieces -> `Vocabulary` ids -> padded ids with a keep-mask.

Every error is a `DataError` that names the file and line.
"""

from __future__ import annotations

import logging
import random
import re
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from attnkit.data.tables import cell, iter_rows
from attnkit.data.text import iter_text_lines, read_lines
from attnkit.errors import DataError

logger = logging.getLogger("attnkit")

SST5_LABELS = ("very_negative", "negative", "neutral", "positive", "very_positive")  # tree labels 0..4
SST2_LABELS = ("negative", "positive")
SNLI_LABELS = ("entailment", "neutral", "contradiction")  # the Hugging Face ids 0, 1, 2
_PTB_ESCAPES = {"-LRB-": "(", "-RRB-": ")", "-LSB-": "[", "-RSB-": "]", "-LCB-": "{", "-RCB-": "}"}


@dataclass(frozen=True)
class LabelledText:
    """One example: a text (the premise of a pair), its label, and the hypothesis of a pair."""

    text: str
    label: str
    text2: str | None = None


def shown_label(label: str) -> str:
    """A label as one line may hold it: as it is if printable, else escaped (repr: a control character, a line
    break, which YAML would read as the end of a comment); cut at 80 characters."""
    text = label if label.isprintable() else repr(label)
    return text if len(text) <= 80 else text[:80] + "..."


class LabelMap:
    """Label names <-> class ids, stored with a model so evaluation uses the training ids.

    Args:
        labels: The label names in class-id order; no repeats.

    Raises:
        DataError: A label repeats.
    """

    def __init__(self, labels: Sequence[str]) -> None:
        self.labels = tuple(labels)
        self._ids = {label: i for i, label in enumerate(self.labels)}
        if len(self._ids) != len(self.labels):
            raise DataError(f"label map: a label appears twice in {list(self.labels)}")

    @classmethod
    def build(cls, labels: Iterable[str]) -> LabelMap:
        """The distinct labels, sorted (the same data always gives the same ids)."""
        return cls(sorted(set(labels)))

    def __len__(self) -> int:
        return len(self.labels)

    def shown(self) -> str:
        """The labels for one line of an error or a YAML comment (`shown_label` each, the list cut at 200 characters)."""
        text = ", ".join(shown_label(label) for label in self.labels)
        return text if len(text) <= 200 else text[:200] + "..."

    def __contains__(self, label: object) -> bool:
        return label in self._ids

    def __eq__(self, other: object) -> bool:
        return isinstance(other, LabelMap) and self.labels == other.labels

    def __repr__(self) -> str:
        return f"LabelMap({list(self.labels)})"

    def index(self, label: str) -> int:
        """The class id of a label (KeyError if unknown; the readers check labels first)."""
        return self._ids[label]

    def to_json(self) -> dict[str, Any]:
        """Return ``{"labels": [...]}`` for `from_json`."""
        return {"labels": list(self.labels)}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> LabelMap:
        """Rebuild a LabelMap saved with `to_json`.

        Raises:
            DataError: No list of string labels under ``"labels"``.
        """
        labels = data.get("labels") if isinstance(data, dict) else None
        if not isinstance(labels, list) or not labels or not all(isinstance(x, str) for x in labels):
            raise DataError("label map JSON: expected a non-empty list of strings under 'labels'")
        return cls(labels)


def read_labelled(
    path: str | Path,
    *,
    text_column: str,
    label_column: str,
    text2_column: str | None = None,
    label_map: LabelMap | None = None,
    skip_labels: Collection[str] = (),
    rename_labels: Mapping[str, str] | None = None,
) -> tuple[list[LabelledText], LabelMap]:
    """Read labelled texts from a CSV, TSV, JSONL or JSON table (`attnkit.data.tables`).

    Blank lines are skipped; texts and labels are stripped of surrounding whitespace.

    Args:
        path: ``.csv``, ``.tsv``, ``.jsonl`` or ``.json`` file, optionally ``.gz``.
        text_column: Column (or JSON field) of the text, the premise of a pair.
        label_column: Column of the label (JSON numbers are turned into strings).
        text2_column: Column of the second text (the hypothesis), for sentence pairs.
        label_map: The labels a trained model knows; any other label is an error. ``None``: every
            label is allowed and the returned map is built from the data.
        skip_labels: Labels whose rows are skipped and counted (e.g. SNLI's ``-``).
        rename_labels: Maps labels as read to names (e.g. ``{"0": "entailment"}``), before the
            label check.

    Returns:
        ``(examples, label_map)``: the examples in file order, and ``label_map`` or the sorted
        labels of the data.

    Raises:
        DataError: Unreadable file, invalid UTF-8 or JSON, a missing column, a row with another
            number of fields than the header, an empty text, an unknown label, or no examples.
    """
    columns = [c for c in (text_column, text2_column, label_column) if c is not None]
    rows = iter_rows(path, columns)
    examples, skipped = [], 0
    for where, row in rows:
        label = cell(row, label_column, where, "label")
        if label in skip_labels:
            skipped += 1
            continue
        label = rename_labels.get(label, label) if rename_labels else label
        if label_map is not None and label not in label_map:
            raise DataError(f"{where}: unknown label {shown_label(repr(label))} (known: {label_map.shown()})")
        text2 = None if text2_column is None else cell(row, text2_column, where)
        examples.append(LabelledText(cell(row, text_column, where), label, text2))
    if skipped:
        logger.info("%s: skipped %d rows labelled %s", path, skipped, "/".join(sorted(skip_labels)))
    if not examples:
        raise DataError(f"{path}: no labelled examples")
    return examples, label_map if label_map is not None else LabelMap.build(e.label for e in examples)


def parse_sst_tree(tree: str, where: str = "SST tree") -> list[tuple[str, int]]:
    """Every labelled node of one SST tree ``(3 (2 It) (4 ...))`` as ``(text, label 0-4)``.

    Nodes come in pre-order, so the whole sentence is first. Words are joined by single spaces with
    the PTB escapes undone (``-LRB-`` -> ``(``, ``\\/`` -> ``/``, ``\\*`` -> ``*``).

    Args:
        tree: One tree in bracket notation.
        where: File and line for error messages.

    Raises:
        DataError: Unbalanced brackets, a missing or out-of-range label, a node without words, or
            text outside the tree.
    """
    tokens = re.findall(r"\(|\)|[^\s()]+", tree)
    nodes: list[tuple[str, int] | None] = []  # pre-order; filled in when the node closes
    stack: list[tuple[int, int, list[str]]] = []  # open nodes: (index in nodes, label, words)
    i = 0
    while i < len(tokens):
        token = tokens[i]
        if token == "(":
            label = tokens[i + 1] if i + 1 < len(tokens) else ""
            if label not in ("0", "1", "2", "3", "4"):
                raise DataError(f"{where}: expected a label 0-4 after '(', got {label!r}")
            stack.append((len(nodes), int(label), []))
            nodes.append(None)
            i += 1
        elif token == ")":
            if not stack:
                raise DataError(f"{where}: unbalanced ')'")
            index, label, words = stack.pop()
            if not words:
                raise DataError(f"{where}: a node without words")
            nodes[index] = (" ".join(words), label)
            if stack:
                stack[-1][2].extend(words)
            elif i != len(tokens) - 1:
                raise DataError(f"{where}: text after the end of the tree")
        elif not stack:
            raise DataError(f"{where}: {token!r} outside the tree")
        else:
            stack[-1][2].append(_PTB_ESCAPES.get(token, token).replace("\\/", "/").replace("\\*", "*"))
        i += 1
    if stack or not nodes:
        raise DataError(f"{where}: unbalanced '(' or no tree")
    return nodes  # type: ignore[return-value]  # every node was filled in when it closed


def read_sst_trees(path: str | Path, *, phrases: bool = False, binary: bool = False) -> tuple[list[LabelledText], LabelMap]:
    """Read an SST tree file (one tree a line) as sentences or as all labelled phrases.

    Args:
        path: ``trees_*.txt`` or ``.gz``.
        phrases: Every labelled node (words included), each distinct text once (first label
            wins); else the sentences (root nodes) only.
        binary: SST-2: drop neutral (2), 0-1 -> negative, 3-4 -> positive; else SST-5.

    Returns:
        ``(examples, LabelMap(SST2_LABELS or SST5_LABELS))``.
    """
    examples, seen = [], set()
    for number, line in enumerate(read_lines(path), start=1):
        if not line:
            continue
        nodes = parse_sst_tree(line, f"{path}, line {number}")
        for text, label in nodes if phrases else nodes[:1]:
            name = _sst_label(label, binary)
            if name is None or (phrases and text in seen):
                continue
            seen.add(text)
            examples.append(LabelledText(text, name))
    return examples, LabelMap(SST2_LABELS if binary else SST5_LABELS)


def read_sst_tsv(path: str | Path, *, binary: bool = False) -> tuple[list[LabelledText], LabelMap]:
    """Read the flat SST file: ``__label__K<TAB>sentence`` with K = 1..5 = tree label + 1.

    Args:
        path: ``sst5_*.tsv`` or ``.gz`` (no header; split on the first tab, no quoting).
        binary: SST-2 as in `read_sst_trees`.

    Raises:
        DataError: A line without tab, a label other than ``__label__1..5``, or an empty sentence.
    """
    examples = []
    for number, line in enumerate(read_lines(path), start=1):
        if not line:
            continue
        label, _, text = line.partition("\t")
        if label not in {f"__label__{k}" for k in range(1, 6)}:
            raise DataError(f"{path}, line {number}: expected '__label__1' .. '__label__5' and a tab, got {label[:20]!r}")
        if not text.strip():
            raise DataError(f"{path}, line {number}: empty text")
        name = _sst_label(int(label[-1]) - 1, binary)
        if name is not None:
            examples.append(LabelledText(text.strip(), name))
    return examples, LabelMap(SST2_LABELS if binary else SST5_LABELS)


def _sst_label(label: int, binary: bool) -> str | None:
    """SST-5 name of a tree label 0-4, or its SST-2 name (None for neutral)."""
    if not binary:
        return SST5_LABELS[label]
    return None if label == 2 else SST2_LABELS[label > 2]


def read_snli(path: str | Path) -> list[LabelledText]:
    """Read SNLI pairs (premise as ``text``, hypothesis as ``text2``) from a TSV file.

    Two layouts are recognised by the header: the Hugging Face one (``premise``, ``hypothesis``,
    ``label`` = 0 entailment, 1 neutral, 2 contradiction, -1 no gold label) and the original
    distribution's (``sentence1``, ``sentence2``, ``gold_label`` by name, ``-`` no gold label).
    Pairs without a gold label are skipped.

    Raises:
        DataError: As `read_labelled`, and for labels other than the three classes.
    """
    lines = iter_text_lines(path, strip=False)
    header = next(lines, (1, ""))[1].split("\t")
    lines.close()
    original = "gold_label" in header
    examples, _ = read_labelled(
        path,
        text_column="sentence1" if original else "premise",
        text2_column="sentence2" if original else "hypothesis",
        label_column="gold_label" if original else "label",
        label_map=LabelMap(SNLI_LABELS),
        skip_labels={"-", "-1"},
        rename_labels=None if original else {str(i): name for i, name in enumerate(SNLI_LABELS)},
    )
    return examples


def split_by_premise(examples: Sequence[LabelledText], dev_fraction: float = 0.1, seed: int = 0) -> tuple[list[LabelledText], list[LabelledText]]:
    """Split pairs into train and dev by premise: all pairs of one premise land on one side.

    The distinct premises are sorted, shuffled with ``seed`` and the first
    ``round(dev_fraction * count)`` go to dev, so the split depends only on the data and the seed.

    Returns:
        ``(train, dev)``, each in the input order.
    """
    if not 0 < dev_fraction < 1:
        raise ValueError(f"dev_fraction must be between 0 and 1, got {dev_fraction}")
    premises = sorted({e.text for e in examples})
    random.Random(seed).shuffle(premises)
    dev_premises = set(premises[: round(dev_fraction * len(premises))])
    return [e for e in examples if e.text not in dev_premises], [e for e in examples if e.text in dev_premises]
