"""The settings of `attnkit attention` (one dataclass for both kinds of source)."""

from __future__ import annotations

from dataclasses import dataclass

METHODS = ("ixg", "ig")  # input x gradient, integrated gradients (attnkit.analysis.attribution)


@dataclass(frozen=True)
class AttentionOptions:
    """What to collect besides the attention maps, and how to read the input."""

    target: str | None = None  # encoder-decoder: the target to force (None: the model's greedy output)
    image: str | None = None  # vision models (and caption runs): the image file
    truncate: bool = False  # cut an input longer than the model's positions (else: an error)
    words: bool = False  # merge subword pieces into words
    flow: bool = False  # attention flow (slow: T^2 maximum flows)
    attribute: tuple[str, ...] = ()  # attribution methods, from METHODS
    output: int | None = None  # which output to attribute: a class, or an output position (None: the model's choice)
    max_new_tokens: int | None = None  # encoder-decoder: the longest greedy output (None: 2 x input + 10)
    checkpoint: str = "best"  # attnkit runs: which checkpoint
