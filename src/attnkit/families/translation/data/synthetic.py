"""Synthetic sequence tasks (copy, reverse, sort) for checking that a model can learn at all.

Tokens are ``t0 .. t{vocab_size-1}``; "sort" orders them by their number (t2 before t10).
"""

from __future__ import annotations

import random

TASKS = ("copy", "reverse", "sort")


def generate(task: str, n: int, *, vocab_size: int, min_len: int, max_len: int, seed: int) -> list[tuple[str, str]]:
    """Generate ``n`` random source/target pairs for a task.

    Args:
        task: ``"copy"`` (target = source), ``"reverse"`` or ``"sort"`` (ascending by number).
        n: Number of pairs.
        vocab_size: Number of distinct tokens.
        min_len: Shortest sequence, in tokens (>= 1).
        max_len: Longest sequence, in tokens.
        seed: Seed; the same arguments always give the same pairs.

    Returns:
        ``(source, target)`` pairs, each a space-separated token string such as ``"t7 t3 t12"``.

    Raises:
        ValueError: Unknown task or impossible lengths/vocabulary size.
    """
    if task not in TASKS:
        raise ValueError(f"task must be one of {TASKS}, not {task!r}")
    if not 1 <= min_len <= max_len or vocab_size < 1:
        raise ValueError(f"need 1 <= min_len <= max_len and vocab_size >= 1, got min_len={min_len}, max_len={max_len}, vocab_size={vocab_size}")
    rng = random.Random(seed)
    pairs = []
    for _ in range(n):
        source = [rng.randrange(vocab_size) for _ in range(rng.randint(min_len, max_len))]
        target = {"copy": source, "reverse": source[::-1], "sort": sorted(source)}[task]
        pairs.append((_join(source), _join(target)))
    return pairs


def _join(numbers: list[int]) -> str:
    """Spell token numbers as ``"t3 t1 t4"``."""
    return " ".join(f"t{i}" for i in numbers)
