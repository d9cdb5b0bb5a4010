"""Tests for attnkit.data.vocab: special ids, deterministic build order, encode/decode, JSON."""

from __future__ import annotations

import json

import pytest

from attnkit.data.vocab import BOS, EOS, PAD, SPECIALS, UNK, Vocabulary
from attnkit.errors import DataError

SENTENCES = [["b", "a", "c"], ["a", "b"], ["d", "a"], ["c"]]  # a:3, b:2, c:2, d:1


def test_specials_come_first() -> None:
    assert (PAD, UNK, BOS, EOS) == (0, 1, 2, 3)
    assert SPECIALS == ("<pad>", "<unk>", "<s>", "</s>")
    vocab = Vocabulary(["x"])
    assert len(vocab) == 5
    assert vocab.to_json() == {"tokens": ["<pad>", "<unk>", "<s>", "</s>", "x"]}


def test_build_orders_by_frequency_then_text() -> None:
    # Hand count: a 3, b 2, c 2, d 1 -> a, then b and c tied (alphabetical), then d.
    assert Vocabulary.build(SENTENCES).to_json()["tokens"][4:] == ["a", "b", "c", "d"]
    assert Vocabulary.build(SENTENCES, min_freq=2).to_json()["tokens"][4:] == ["a", "b", "c"]
    assert len(Vocabulary.build(SENTENCES, max_size=6)) == 6  # the four specials + a, b


def test_build_ignores_text_spelling_a_special() -> None:
    assert Vocabulary.build([["<s>", "x", "</s>", "<pad>"]]).to_json()["tokens"][4:] == ["x"]


def test_encode_decode() -> None:
    vocab = Vocabulary(["a", "b"])  # a=4, b=5
    assert vocab.encode(["a", "zz", "b"], add_bos=True, add_eos=True) == [BOS, 4, UNK, 5, EOS]
    assert vocab.encode(["<s>", "</s>", "<pad>", "<unk>"]) == [UNK] * 4  # text: never a control
    assert vocab.decode([BOS, 4, PAD, UNK, 5, EOS, 4, 5]) == ["a", "<unk>", "b"]


def test_json_round_trip_through_text() -> None:
    vocab = Vocabulary.build(SENTENCES)
    again = Vocabulary.from_json(json.loads(json.dumps(vocab.to_json())))
    assert again == vocab
    assert again != Vocabulary(["a"])


def test_from_json_rejects_missing_specials() -> None:
    with pytest.raises(DataError, match=r"^vocabulary JSON: expected 'tokens' starting with"):
        Vocabulary.from_json({"tokens": ["a", "b"]})


def test_duplicate_tokens_rejected() -> None:
    with pytest.raises(DataError, match=r"^vocabulary: token 'a' appears twice$"):
        Vocabulary(["a", "b", "a"])
    with pytest.raises(DataError, match=r"token '<s>' appears twice"):
        Vocabulary(["<s>"])
