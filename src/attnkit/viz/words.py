"""Subword pieces merged into words, in attention maps (`plot --words`, `attention --words`).

A word's pieces are summed over keys (so rows still sum to 1) and averaged over queries.
`word_groups` finds the words of a piece sequence in the three common spellings: a word-start
mark (SentencePiece's "\u2581", GPT-2's byte-level "\u0120"), or WordPiece's "##" on every piece but
the first. A special token (`specials`) is a word of its own.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

import torch
from torch import Tensor

WORD_STARTS = ("\u2581", "\u0120")  # SentencePiece's word-start mark; GPT-2's byte-level space
CONTINUATION = "##"  # WordPiece (BERT): every piece of a word but the first


def merge_matrix(weights: Tensor, row_groups: Sequence[Sequence[int]], col_groups: Sequence[Sequence[int]]) -> Tensor:
    """(..., Tq, Tk) -> (..., Wq, Wk): keys summed within a word, queries averaged within a word."""
    cols = torch.stack([weights[..., list(g)].sum(-1) for g in col_groups], dim=-1)  # (..., Tq, Wk)
    return torch.stack([cols[..., list(g), :].mean(-2) for g in row_groups], dim=-2)  # (..., Wq, Wk)


def word_groups(pieces: Sequence[str], specials: Collection[str] = ()) -> list[list[int]]:
    """Indices of the pieces of each word (WordPiece if any piece starts with "##", else word-start marks)."""
    wordpiece = any(p.startswith(CONTINUATION) for p in pieces)
    groups: list[list[int]] = []
    for i, piece in enumerate(pieces):
        starts = not piece.startswith(CONTINUATION) if wordpiece else piece.startswith(WORD_STARTS)
        if not groups or starts or piece in specials or pieces[i - 1] in specials:
            groups.append([i])
        else:
            groups[-1].append(i)
    return groups


def join_pieces(pieces: Sequence[str], groups: Sequence[Sequence[int]]) -> list[str]:
    """The word of each group: its pieces joined, the marks removed."""
    words = []
    for g in groups:
        text = "".join(pieces[i].removeprefix(CONTINUATION) if k else pieces[i] for k, i in enumerate(g))
        for mark in WORD_STARTS:
            text = text.replace(mark, "")
        words.append(text or pieces[g[0]])
    return words
