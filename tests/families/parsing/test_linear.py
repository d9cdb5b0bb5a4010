"""Linearisation (Vinyals et al. 2015), de-linearisation, repair and the decoding constraint."""

from __future__ import annotations

import random

import pytest

from attnkit.errors import DataError
from attnkit.families.parsing.linear import (
    EOS,
    PLACEHOLDER,
    LinearState,
    delinearise,
    is_close,
    is_open,
    linearise,
    repair,
    target_vocabulary,
)
from attnkit.families.parsing.trees import parse_trees, spans

# Vinyals et al. (2015), Figure 1's sentence (their target there keeps POS tags; ours are XX).
JOHN = parse_trees("(S (NP (NNP John)) (VP (VBZ has) (NP (DT a) (NN dog))) (. .))")[0]
WORDS = ["John", "has", "a", "dog", "."]


def test_linearise_the_papers_example():
    words, target = linearise(JOHN)
    assert words == WORDS
    assert " ".join(target) == "(S (NP XX )NP (VP XX (NP XX XX )NP )VP XX )S"
    _, kept = linearise(JOHN, keep_words=True)
    assert " ".join(kept) == "(S (NP John )NP (VP has (NP a dog )NP )VP . )S"


def test_target_vocabulary_is_brackets_leaf_and_eos(splits):
    vocab = target_vocabulary(splits["train"])
    labels = {label for tree in splits["train"] for label, _, _ in spans(tree)}
    # exactly: "(L" and ")L" for every constituent label, the placeholder, EOS
    assert sorted(vocab) == sorted([f"({x}" for x in labels] + [f"){x}" for x in labels] + [PLACEHOLDER, EOS])
    assert len(labels) == 27 and len(vocab) == 56  # counted on the sample's training files
    assert vocab[-1] == EOS


def test_round_trip_is_the_identity_on_every_training_tree(splits):
    for tree in splits["train"]:
        words, target = linearise(tree)
        assert delinearise(target, words, tree.tags()) == tree  # with the gold tags put back
        plain = delinearise([*target, EOS], words)  # XX tags: the same brackets
        assert spans(plain) == spans(tree) and plain.tags() == [PLACEHOLDER] * len(words)
        _, kept = linearise(tree, keep_words=True)
        assert delinearise(kept, words, tree.tags(), keep_words=True) == tree


@pytest.mark.parametrize(
    ("symbols", "message"),
    [
        (["XX", "(S", ")S"], r"symbol 1 \('XX'\) is not allowed"),
        (["(S", ")S"], r"symbol 2 \('\)S'\) is not allowed"),  # an empty constituent
        (["(S", "(NP", "XX", ")S"], r"symbol 4 \('\)S'\) is not allowed"),  # wrong closer
        (["(S", "XX", "(NP", "XX", ")NP", ")S", EOS], r"symbol 3 \('\(NP'\) is not allowed"),  # no word left for NP
        (["(S", "XX", ")S", "(S"], r"symbol 4"),  # a second root
        (["(S", "XX"], r"ends before its tree is complete \(1 of 1 words\)"),
    ],
)
def test_delinearise_rejects_invalid_sequences(symbols, message):
    with pytest.raises(DataError, match=message):
        delinearise(symbols, ["w"])


def _random_symbols(rng: random.Random, vocab: list[str]) -> list[str]:
    return [rng.choice(vocab) for _ in range(rng.randint(0, 25))]


def _mutate(rng: random.Random, symbols: list[str], vocab: list[str]) -> list[str]:
    """1-3 random edits (delete, insert or replace one symbol): mostly invalid, sometimes not."""
    out = list(symbols)
    for _ in range(rng.randint(1, 3)):
        i = rng.randrange(len(out))
        edit = rng.choice(["delete", "insert", "replace"])
        out[i : i + (edit != "insert")] = [] if edit == "delete" else [rng.choice(vocab)]
    return out


def test_repair_always_gives_a_tree_over_exactly_the_words(splits):
    rng = random.Random(0)
    vocab = target_vocabulary(splits["train"]) + ["<unk>", "dog"]
    trees = splits["dev"]
    n_repaired = 0
    for k in range(1500):
        tree = trees[k % len(trees)]
        words, target = linearise(tree)
        symbols = _random_symbols(rng, vocab) if k % 3 == 0 else _mutate(rng, target, vocab)
        repaired_tree, repaired = repair(symbols, words, tree.tags())
        assert repaired_tree.words() == words and repaired_tree.tags() == tree.tags()
        try:
            expected = delinearise(symbols, words, tree.tags())
        except DataError:
            expected = None
        assert repaired == (expected is None)  # repaired exactly when the sequence was invalid
        if expected is not None:
            assert repaired_tree == expected
        n_repaired += repaired
    assert 1000 < n_repaired < 1500  # both kinds of sequence were tried


@pytest.mark.parametrize(
    ("symbols", "expected"),
    [
        ("(S (NP XX XX )NP (VP XX )VP )S", "(S (NP (XX a) (XX b)) (VP (XX c)))"),  # valid
        ("(S (NP XX XX", "(S (NP (XX a) (XX b) (XX c)))"),  # missing word and closers added
        ("(S XX XX XX XX XX )S", "(S (XX a) (XX b) (XX c))"),  # extra leaves dropped
        ("XX (NP XX XX )NP", "(S (XX a) (NP (XX b) (XX c)))"),  # no root opened: an S root
        (")S )S (S XX )VP XX XX )S", "(S (XX a) (XX b) (XX c))"),  # unmatched closers dropped
        ("(S XX )S (VP XX XX )VP", "(S (XX a) (VP (XX b) (XX c)))"),  # after the root: inside it
        ("(S (NP )NP XX XX XX )S </s> XX", "(S (XX a) (XX b) (XX c))"),  # empty NP dropped
        ("", "(S (XX a) (XX b) (XX c))"),
    ],
)
def test_repair_cases(symbols, expected):
    tree, repaired = repair(symbols.split(), ["a", "b", "c"])
    assert str(tree) == expected
    assert repaired == (symbols != "(S (NP XX XX )NP (VP XX )VP )S")


def test_repair_with_kept_words_flags_a_wrong_word():
    assert repair("(S a b )S".split(), ["a", "b"], keep_words=True)[1] is False
    tree, repaired = repair("(S a x )S".split(), ["a", "b"], keep_words=True)
    assert repaired and tree.words() == ["a", "b"]


def _walk(rng: random.Random, words: list[str], vocab: list[str], **kwargs) -> list[str]:
    """A random walk over the allowed symbols until EOS."""
    state, symbols = LinearState.start(words, **kwargs), []
    while not state.finished:
        allowed = state.allowed(vocab)
        assert allowed, f"no symbol allowed after {symbols}"
        assert all(state.allows(s) == (s in allowed) for s in vocab)
        symbol = rng.choice(allowed)
        symbols.append(symbol)
        state = state.step(symbol)
    return symbols


def test_random_walks_under_the_constraint_are_always_valid(splits):
    rng = random.Random(1)
    vocab = target_vocabulary(splits["train"])
    for _ in range(300):
        words = [f"w{i}" for i in range(rng.randint(1, 12))]
        max_len = rng.randint(len(words) + 3, 4 * len(words) + 6)
        symbols = _walk(rng, words, vocab, max_len=max_len, max_depth=rng.choice([None, 3]))
        assert len(symbols) <= max_len and symbols[-1] == EOS
        tree = delinearise(symbols, words)  # raises if the walk produced an invalid sequence
        assert repair(symbols, words) == (tree, False)
    words = ["the", "dog", "barks"]
    kept = _walk(rng, words, vocab + words + ["cat"], keep_words=True, max_len=20)
    assert [s for s in kept if not is_open(s) and not is_close(s) and s != EOS] == words


def test_allowed_symbols_step_by_step():
    vocab = ["(S", ")S", "(NP", ")NP", PLACEHOLDER, EOS]
    state = LinearState.start(["a", "b"])
    assert state.allowed(vocab) == ["(S", "(NP"]  # only a root can start
    state = state.step("(S")
    assert state.allowed(vocab) == ["(S", "(NP", PLACEHOLDER]  # S is empty: no close yet
    state = state.step("(NP").step(PLACEHOLDER)
    assert state.allowed(vocab) == ["(S", "(NP", ")NP", PLACEHOLDER]  # NP closes with )NP only
    state = state.step(")NP").step(PLACEHOLDER)
    assert state.allowed(vocab) == [")S"]  # no word left: no open, no leaf
    state = state.step(")S")
    assert state.allowed(vocab) == [EOS] and state.step(EOS).allowed(vocab) == []
    with pytest.raises(DataError, match=r"symbol 2 \('\)S'\) is not allowed"):
        LinearState.start(["a"]).step("(S").step(")S")
    # the root may not close while words remain; max_len leaves room to finish
    assert not LinearState.start(["a", "b"]).step("(S").step(PLACEHOLDER).allows(")S")
    tight = LinearState.start(["a"], max_len=4).step("(S")  # (S XX )S </s>
    assert tight.allowed(vocab) == [PLACEHOLDER]
    with pytest.raises(DataError, match="max_len 3 is too short for 1 words"):
        LinearState.start(["a"], max_len=3)
