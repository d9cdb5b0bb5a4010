"""The settings of the explorer's outputs (`attnkit attention`, `report`, `plot`, `serve`'s /attention), for every source."""

from __future__ import annotations

from dataclasses import dataclass

from attnkit.errors import AttnkitError

METHODS = ("ixg", "ig")  # input x gradient, integrated gradients (attnkit.analysis.attribution)
# Which rows of attention flow (`--flow [all]`): the explained output's row (a classifier's first token, a language
# model's last position; an encoder-decoder output reads every encoder row through cross attention), or every row.
FLOWS = ("explained", "all")
FLOW_HELP = ("also attention flow: of the explained output's row (default: a classifier's first token, a language model's last "
             "position; an encoder-decoder model's output needs every encoder row), or `--flow all`: every row (T^2 maximum flows)")  # fmt: skip


@dataclass(frozen=True)
class AttentionOptions:
    """What to collect besides the attention maps, and how to read the input."""

    target: str | None = None  # encoder-decoder: the target to force (None: the model's greedy output)
    image: str | None = None  # vision models (and caption runs): the image file
    truncate: bool = False  # cut an input longer than the model's positions (else: an error)
    words: bool = False  # merge subword pieces into words
    flow: bool | str | None = None  # attention flow: True or "explained" (the explained output's row), "all" (every row); held as FLOWS or None
    attribute: tuple[str, ...] = ()  # attribution methods, from METHODS
    output: int | None = None  # which output to attribute: a class, or an output position (None: the model's choice)
    max_new_tokens: int | None = None  # encoder-decoder: the longest greedy output (None: 2 x input + 10)
    checkpoint: str = "best"  # attnkit runs: which checkpoint
    beam: int | None = None  # attnkit runs: the beam size (None: the run's decode.beam)
    alpha: float | None = None  # attnkit runs: the length penalty (None: the run's decode.alpha)
    nbest: int | None = None  # attnkit runs: the hypotheses listed (None: the beam size)
    pair: bool = False  # Hugging Face classifiers: a tab separates a sentence pair, encoded as the tokenizer encodes pairs
    max_memory: int | None = None  # Hugging Face text models: the memory budget of the full maps, bytes (None: half of what is available)

    def __post_init__(self) -> None:
        flow = {True: "explained", False: None}[self.flow] if isinstance(self.flow, bool) else self.flow
        if flow is not None and flow not in FLOWS:
            raise AttnkitError(f"flow {self.flow!r}: give one of {', '.join(FLOWS)} (or true: explained)")
        object.__setattr__(self, "flow", flow)
