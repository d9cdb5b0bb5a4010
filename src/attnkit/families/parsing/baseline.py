"""The right-branching baseline: the tree a parser should beat without looking at the words.

English is mostly right-branching, so the classic structure-free baseline (e.g. Klein & Manning
2001 report it for unlabelled parsing) attaches each word to a constituent over everything that
follows it: ``(S w1 (S w2 (S ... (S w(n-1) wn))))``, n - 1 constituents for n words (one for a
single word). Every constituent is labelled ``S``: the root label of about 90% of the WSJ
sample's trees (3,314 of the 3,669 training trees), so the root bracket is usually right; the
inner ones seldom are, since a labelled bracket must match in label as well as span. Preterminals carry the given POS tags (gold tags, so that
tagging accuracy is not what is measured) or ``XX``.
"""

from __future__ import annotations

from collections.abc import Sequence

from attnkit.errors import DataError
from attnkit.families.parsing.linear import PLACEHOLDER
from attnkit.families.parsing.trees import Tree


def right_branching(words: Sequence[str], tags: Sequence[str] | None = None, *, label: str = "S") -> Tree:
    """The right-branching tree over `words`.

    Args:
        words: The sentence (at least one word).
        tags: POS tags for the preterminals (default ``XX``), one per word.
        label: The label of every constituent.

    Returns:
        ``(S (t1 w1) (S (t2 w2) ... (S (t(n-1) w(n-1)) (tn wn))))``; ``(S (t1 w1))`` for one word.

    Raises:
        DataError: No words, or a different number of tags.
    """
    if not words:
        raise DataError("a parse needs at least one input word")
    tags = [PLACEHOLDER] * len(words) if tags is None else tags
    if len(tags) != len(words):
        raise DataError(f"{len(tags)} tags for {len(words)} words")
    leaves = [Tree(tag, (word,)) for word, tag in zip(words, tags)]
    if len(leaves) == 1:
        return Tree(label, (leaves[0],))
    tree = Tree(label, (leaves[-2], leaves[-1]))
    for leaf in reversed(leaves[:-2]):
        tree = Tree(label, (leaf, tree))
    return tree
