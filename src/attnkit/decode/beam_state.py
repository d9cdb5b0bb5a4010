"""Reordering any decoder state by beam, and the bookkeeping a search keeps per row.

A decoder state is a dataclass (or list, tuple) whose tensors all have the batch on dim 0. The
functions here map over it without knowing the model (house rule 6: no `isinstance` on model types):

- `expand_to_beams` repeats each sentence's state K times, (B, ...) -> (B*K, ...), once after
  `init_state`;
- `gather_beams` picks rows, (R, ...) -> (N, ...): it reorders beams after a step and drops the
  rows of finished sentences, in one `index_select`.

A dataclass field made with `per_sentence()` holds one row per source sentence, shared by all its
beams (e.g. the encoder memory's projected keys and values): `expand_to_beams` leaves it as is and
`gather_beams` only drops the rows of finished sentences, so it is never copied per beam or step.

A field made with `picked_by("rows")` is picked lazily: `map_state` maps the dataclass's `rows`
field (which stored row each row reads) and leaves this one as is, so that a search's reorder costs
no copy; the model copies the picked rows once, when it next extends them (e.g. a self-attention
cache, `KVCache.append(new, rows)`). Where `rows` is None the field is mapped as any other.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import torch
from torch import Tensor

StateT = TypeVar("StateT")
Fn = Callable[[Tensor], Tensor]


def per_sentence() -> Any:
    """A dataclass field holding one row per source sentence, shared by the sentence's beams."""
    return dataclasses.field(metadata={"per_sentence": True})


def picked_by(rows: str) -> Any:
    """A dataclass field whose rows are those its dataclass's tensor field `rows` (R,) lists (see the module doc)."""
    return dataclasses.field(metadata={"picked_by": rows})


def map_state(state: StateT, fn: Fn, sentence_fn: Fn | None = None) -> StateT:
    """Apply `fn` to every tensor in a decoder state, recursively.

    Dataclasses are rebuilt with `dataclasses.replace` (fields with `init=False` are left to the
    dataclass, `picked_by` fields are left as they are unless their rows field is None), lists and tuples (named tuples too) and dicts are rebuilt with the same type;
    anything else (None, ints, strings) is returned as is.

    Args:
        state: a tensor, or a dataclass / list / tuple / dict nesting tensors and plain values.
        fn: maps one tensor to another.
        sentence_fn: used instead of `fn` inside `per_sentence()` fields (default: `fn`).

    Returns:
        A state of the same structure; the input is not modified.
    """
    if isinstance(state, Tensor):
        return fn(state)
    if dataclasses.is_dataclass(state) and not isinstance(state, type):
        changes = {}
        for f in dataclasses.fields(state):
            rows = f.metadata.get("picked_by")
            if f.init and (rows is None or getattr(state, rows) is None):
                inner = sentence_fn if f.metadata.get("per_sentence") and sentence_fn is not None else fn
                changes[f.name] = map_state(getattr(state, f.name), inner, sentence_fn)
        return dataclasses.replace(state, **changes)
    if isinstance(state, tuple) and hasattr(state, "_fields"):
        return type(state)(*(map_state(x, fn, sentence_fn) for x in state))
    if isinstance(state, (list, tuple)):
        return type(state)(map_state(x, fn, sentence_fn) for x in state)
    if isinstance(state, dict):
        return type(state)((k, map_state(v, fn, sentence_fn)) for k, v in state.items())
    return state


def gather_beams(state: StateT, index: Tensor, beam: int = 1) -> StateT:
    """Select rows of every tensor in `state`: `x.index_select(0, index)`.

    Args:
        state: a decoder state whose tensors are (R, ...), `per_sentence()` fields (R / K, ...).
        index: (N,) long, rows to keep in their new order (on the state's device); may repeat a
            row (two beams continuing one parent) and may leave rows out (finished sentences).
            With K > 1, the K rows n*K .. n*K+K-1 of the result must come from one sentence.
        beam: K, the rows per sentence, before and after.

    Returns:
        The state with tensors (N, ...), `per_sentence()` fields (N / K, ...).
    """
    sentences = torch.div(index[::beam], beam, rounding_mode="floor")  # (N / K,)
    return map_state(state, lambda x: x.index_select(0, index), lambda x: x.index_select(0, sentences))  # (N, ...)


def expand_to_beams(state: StateT, beam: int) -> StateT:
    """Repeat each sentence's state `beam` times: (B, ...) -> (B*K, ...), rows b*K .. b*K+K-1.

    Args:
        state: a decoder state whose tensors are (B, ...).
        beam: K.

    Returns:
        The state with tensors (B*K, ...); `per_sentence()` fields stay (B, ...).
    """
    return map_state(state, lambda x: x.repeat_interleave(beam, dim=0), lambda x: x)  # (B*K, ...)


@dataclass
class BeamState:
    """What a search knows about each of its R = N*K rows (N active sentences, K beams each).

    Rows n*K .. n*K+K-1 belong to the n-th active sentence. Every field has R on dim 0, so
    `gather_beams` reorders and drops rows of this bookkeeping exactly as it does the model's
    state. Greedy search uses it with K = 1.

    Attributes:
        sentence: (R,) long, index of the row's sentence in the input batch.
        max_len: (R,) long, the number of steps the sentence may take.
        tokens: (R, t) long, tokens generated so far (BOS excluded; an EOS is only ever last).
        log_prob: (R,) float32, log P(tokens | X).
        attention: (R, t, ..., S) cross-attention of each step, or None.
    """

    sentence: Tensor
    max_len: Tensor
    tokens: Tensor
    log_prob: Tensor
    attention: Tensor | None = None

    @classmethod
    def start(cls, max_len: Tensor, beam: int) -> BeamState:
        """The state before the first step: beam 0 at log-prob 0, the other beams at -inf.

        Starting beams 1..K-1 at -inf makes the first step expand beam 0 only, so the K
        identical copies of each sentence do not yield K identical hypotheses.

        Args:
            max_len: (B,) long, steps allowed per sentence (`hypothesis.max_lengths`).
            beam: K.
        """
        batch = max_len.size(0)
        sentence = torch.arange(batch, device=max_len.device).repeat_interleave(beam)  # (B*K,)
        log_prob = torch.full((batch, beam), float("-inf"), device=max_len.device)  # (B, K)
        log_prob[:, 0] = 0.0
        return cls(
            sentence=sentence,
            max_len=max_len.repeat_interleave(beam),  # (B*K,)
            tokens=max_len.new_zeros((batch * beam, 0)),  # (B*K, 0)
            log_prob=log_prob.view(-1),  # (B*K,)
        )

    def extend(self, tokens: Tensor, log_prob: Tensor, attention: Tensor | None) -> BeamState:
        """Append one step.

        Args:
            tokens: (R,) long, the token each row chose.
            log_prob: (R,) new cumulative log-probabilities.
            attention: (R, ..., S) this step's attention, or None to stop recording it.
        """
        history = None
        if attention is not None and (self.attention is not None or self.tokens.size(1) == 0):
            step = attention.unsqueeze(1)  # (R, 1, ..., S)
            history = step if self.attention is None else torch.cat([self.attention, step], dim=1)  # (R, t+1, ..., S)
        return BeamState(
            sentence=self.sentence,
            max_len=self.max_len,
            tokens=torch.cat([self.tokens, tokens.unsqueeze(1)], dim=1),  # (R, t+1)
            log_prob=log_prob,
            attention=history,
        )


def check_batch_first(state: Any, batch: int) -> None:
    """Raise ValueError unless every tensor in `state` has `batch` rows on dim 0.

    Model authors call it in their tests: a state that passes can be expanded, reordered and
    trimmed by the searches. (A 0-dim tensor or a tensor shared across the batch would not be.)

    Args:
        state: a decoder state.
        batch: the expected size of dim 0.
    """

    def check(x: Tensor) -> Tensor:
        if x.dim() == 0 or x.size(0) != batch:
            shape = tuple(x.shape)
            raise ValueError(f"decoder state tensor of shape {shape} does not have the batch ({batch}) on dim 0")
        return x

    map_state(state, check)
