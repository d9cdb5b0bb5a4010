"""Unknown-word signatures (`codec.signature`): hand-checked classes, and a vocabulary where rare
training words count as their signature, on both sides with `leaves: words`."""

from __future__ import annotations

import pytest

from attnkit.data.vocab import UNK
from attnkit.families.parsing.codec import build_vocabs, encode_tree, leaf_table, signature, source_ids
from attnkit.families.parsing.trees import parse_trees

TREES = parse_trees(
    "(S (NP (DT the) (NN dog)) (VP (VBZ barks)) (. .)) (S (NP (DT the) (NN cat)) (VP (VBD jumped)) (. .)) (S (NP (NNP Smith)) (VP (VBD walked)) (. .))"
)


@pytest.mark.parametrize(
    ("word", "expected"),
    [("running", "<unk-x-ing>"), ("Reagan", "<unk-Xx>"), ("IBM", "<unk-X>"), ("1,200", "<unk-num>"), ("mid-1980s", "<unk-x-num-dash-s>"),
     ("well-known", "<unk-x-dash>"), ("quickly", "<unk-x-ly>"), ("US-Soviet", "<unk-Xx-dash>"), ("dogs", "<unk-x-s>"), ("is", "<unk-x>"),
     ("%", "<unk>")],
)  # fmt: skip
def test_signatures_are_shape_digits_hyphen_and_suffix(word, expected):
    assert signature(word) == expected


@pytest.mark.parametrize("keep_words", [False, True])
def test_rare_words_count_as_their_signature(keep_words):
    vocabs = build_vocabs(TREES, keep_words=keep_words, min_freq=2, signatures=True)
    words = vocabs.words.to_json()["tokens"]
    assert {"the", ".", "<unk-x-ed>", "<unk-x>"} <= set(words)  # jumped + walked; dog, cat (barks: <unk-x-s>, once)
    assert "dog" not in words and "<unk-x-s>" not in words
    ids = source_ids(vocabs, ["the", "horse", "kicked", "Jones", "."])
    assert vocabs.words.decode(ids) == ["the", "<unk-x>", "<unk-x-ed>", "<unk>", "."]  # <unk-Xx> was seen once
    src, tgt = encode_tree(vocabs, TREES[1])
    assert vocabs.words.decode(src) == ["the", "<unk-x>", "<unk-x-ed>", "."]
    leaves = [s for s in vocabs.symbols.decode(tgt) if s[0] not in "()"]
    assert leaves == (vocabs.words.decode(src) if keep_words else ["XX"] * 4)
    table = leaf_table(vocabs)  # the leaf the constrained search writes for each source token
    assert [vocabs.symbols.decode([table[i]]) for i in src] == [[leaf] for leaf in leaves]
    assert source_ids(vocabs, ["<unk>"]) == [UNK]


def test_without_signatures_unknown_words_are_unk():
    vocabs = build_vocabs(TREES, keep_words=False, min_freq=2)
    assert vocabs.words.decode(source_ids(vocabs, ["the", "horse", "jumped"])) == ["the", "<unk>", "<unk>"]
