"""Tests for attnkit.families.translation.data.synthetic: seeded, and the tasks do what they say."""

from __future__ import annotations

import pytest

from attnkit.families.translation.data.synthetic import generate


def numbers(text: str) -> list[int]:
    """'t3 t10' -> [3, 10]."""
    return [int(token[1:]) for token in text.split()]


def test_same_seed_same_pairs_other_seed_other_pairs() -> None:
    kwargs = dict(vocab_size=20, min_len=2, max_len=9)
    assert generate("copy", 50, seed=3, **kwargs) == generate("copy", 50, seed=3, **kwargs)
    assert generate("copy", 50, seed=3, **kwargs) != generate("copy", 50, seed=4, **kwargs)


@pytest.mark.parametrize("task", ["copy", "reverse", "sort"])
def test_tasks(task: str) -> None:
    pairs = generate(task, 200, vocab_size=15, min_len=3, max_len=8, seed=0)
    assert len(pairs) == 200
    for src, tgt in pairs:
        s, t = numbers(src), numbers(tgt)
        assert 3 <= len(s) <= 8 and all(0 <= i < 15 for i in s)
        assert t == {"copy": s, "reverse": s[::-1], "sort": sorted(s)}[task]
    assert {len(numbers(src)) for src, _ in pairs} == set(range(3, 9))  # every length occurs


def test_sort_is_numeric_not_textual() -> None:
    pairs = generate("sort", 100, vocab_size=30, min_len=5, max_len=5, seed=1)
    assert all(numbers(tgt) == sorted(numbers(src)) for src, tgt in pairs)
    # As text "t10" < "t2": most targets differ from a text sort of their source.
    assert sum(tgt.split() != sorted(src.split()) for src, tgt in pairs) > 50


def test_bad_arguments() -> None:
    with pytest.raises(ValueError, match="task must be one of"):
        generate("shuffle", 1, vocab_size=5, min_len=1, max_len=2, seed=0)
    with pytest.raises(ValueError, match="min_len <= max_len"):
        generate("copy", 1, vocab_size=5, min_len=4, max_len=2, seed=0)
