"""What a search returns, and how a hypothesis is scored.

Greedy search and beam search both return `Hypothesis` objects and both score them with the GNMT
length penalty of Wu et al. (2016), "Google's Neural Machine Translation System", eq. 14:

    lp(Y) = (5 + |Y|)^alpha / (5 + 1)^alpha,        s(Y, X) = log P(Y | X) / lp(Y)

(the coverage penalty cp(X; Y) of eq. 14 is left out, i.e. beta = 0). `|Y|` counts the EOS token
when the hypothesis ended with one, so a finished hypothesis of n tokens has |Y| = n + 1 and an
unfinished one (stopped at the maximum length) has |Y| = n. With alpha = 0, lp(Y) = 1 and the score
is the log-probability itself.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from torch import Tensor


class Decodable(Protocol):
    """The decoding protocol every attnkit sequence model implements (see docs/conventions.md).

    `state` is a dataclass whose fields are tensors with the batch on dim 0, None, ints, or
    lists / tuples / dataclasses of those, so that `attnkit.decode.beam_state` can reorder it.
    """

    def encode(self, src: Tensor, src_keep: Tensor) -> Any:
        """src (B, S) long, src_keep (B, S) bool -> memory (any tensor with the batch on dim 0)."""
        ...

    def init_state(self, memory: Any, src_keep: Tensor) -> Any:
        """memory, src_keep (B, S) -> the decoder state before the first step."""
        ...

    def step(self, prev_tokens: Tensor, state: Any) -> tuple[Tensor, Any, Tensor | None]:
        """prev_tokens (B, 1) -> (logits (B, V), state, cross-attention (B, S) or None).

        The logits are the next token's unnormalised log-probabilities (log-probabilities
        themselves are fine too): searches normalise them (`attnkit.decode.scores`).
        """
        ...


@dataclass
class Hypothesis:
    """One output sequence of a search.

    Attributes:
        tokens: the generated token ids, without BOS and without EOS.
        score: the ranking score log P(Y | X) / lp(Y) (`length_penalty`); greedy search uses
            alpha = 0, so its score equals `log_prob`.
        log_prob: log P(Y | X), the sum of the step log-probabilities, EOS's included if finished.
        finished: True if the hypothesis ended with EOS, False if it was cut at the maximum length.
        attention: (T, S) cross-attention of each step, or None when not requested or the model
            returned none. T = len(tokens) + 1 if finished (the EOS step has a row), else
            len(tokens). S counts only the source positions whose `src_keep` is True, so padding
            never shows and the rows line up with the sentence's own tokens. If the model's
            attention has extra leading axes (e.g. (B, H, S)), they are kept: (T, H, S).
    """

    tokens: list[int]
    score: float
    log_prob: float
    finished: bool
    attention: Tensor | None = None


def length_penalty(length: int, alpha: float) -> float:
    """GNMT length penalty lp(Y) = (5 + |Y|)^alpha / (5 + 1)^alpha (Wu et al. 2016, eq. 14).

    Args:
        length: |Y|, the number of target tokens, EOS included when the hypothesis has one.
        alpha: strength of the penalty; 0 disables it (lp = 1). The paper tunes alpha in [0.6, 0.7].

    Returns:
        lp(Y) as a float.
    """
    return (5 + length) ** alpha / (5 + 1) ** alpha


def max_lengths(src_keep: Tensor, max_len_a: float, max_len_b: float) -> Tensor:
    """Number of decoding steps each sentence may take: floor(a * source_length + b), at least 1.

    A step produces one token, EOS included, so a finished hypothesis has at most max_len - 1
    tokens before its EOS and an unfinished one has exactly max_len tokens.

    Args:
        src_keep: (B, S) bool, True at real (non-pad) source positions.
        max_len_a: multiplier of the source length.
        max_len_b: constant added.

    Returns:
        (B,) long tensor on src_keep's device.
    """
    src_len = src_keep.sum(dim=1).double()  # (B,)
    return (max_len_a * src_len + max_len_b).floor().long().clamp(min=1)  # (B,)


def make_hypothesis(
    tokens: list[int],
    log_prob: float,
    *,
    finished: bool,
    alpha: float,
    attention: Tensor | None,
    src_keep: Tensor,
) -> Hypothesis:
    """Score a search result and cut its attention to the real source positions.

    Args:
        tokens: generated tokens, without BOS or EOS.
        log_prob: log P(Y | X), EOS's step included when finished.
        finished: whether the hypothesis ended with EOS (then |Y| = len(tokens) + 1).
        alpha: length-penalty strength (0 for greedy search).
        attention: (T, ..., S) attention of each step, or None.
        src_keep: (S,) bool keep-mask of this sentence's source.

    Returns:
        The `Hypothesis`, its attention on the CPU as (T, ..., S_kept).
    """
    score = log_prob / length_penalty(len(tokens) + int(finished), alpha)
    if attention is not None:
        if attention.size(-1) == src_keep.numel():
            attention = attention[..., src_keep]  # (T, ..., S_kept)
        attention = attention.cpu()  # (T, ..., S_kept)
    return Hypothesis(tokens=tokens, score=score, log_prob=log_prob, finished=finished, attention=attention)
