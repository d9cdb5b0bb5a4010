"""A decoder that can only write well-formed trees over its input words (constrained decoding).

Vinyals et al. (2015, sec. 3.3) decode a linearised tree unconstrained and repair the few
malformed outputs; Vaswani et al. (2017, sec. 6.3) follow them. Here the search itself is
constrained: `ConstrainedDecoder` wraps a model of the decoding protocol (`encode`, `init_state`,
`step`; docs/conventions.md) and sets to -inf, at each step, the logits of every symbol that
`linear.LinearState` would not allow next. So every sequence that reaches EOS is a valid tree
over exactly the input words, and none can run past the search's step limit floor(a * S + b)
(S counts the source EOS, `decode.hypothesis.max_lengths`): an open bracket is allowed only
while there is room to cover the remaining words, close every bracket and write EOS.

The constraint state is batch-first tensors in the decoder state dataclass (`ConstraintState`),
so `decode.beam_state.gather_beams` reorders it with the model's caches and `decode.greedy.greedy`
and `decode.beam.beam_search` run unchanged. Per row: open constituents (`depth`), words covered,
whether the innermost constituent has a word yet (`filled`: the only flag needed, since closing a
constituent fills its parent), whether the root has closed (`done`), symbols written, and the
stack of open labels. Rows of beams at -inf may read symbols that are not allowed; their state
is clamped, never indexed out of range, and such beams never finish. A row with nothing allowed
(only when the step limit is shorter than the shortest tree, n + 3 symbols) may end at once; its
output is then mended by `linear.repair`, as is an output cut at the step limit.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor

from attnkit.data.vocab import EOS, SPECIALS, UNK, Vocabulary
from attnkit.decode.hypothesis import max_lengths
from attnkit.families.parsing.linear import is_close, is_open

OTHER, OPEN, CLOSE, LEAF = 0, 1, 2, 3  # kinds of target symbols (OTHER: specials, never allowed)


@dataclass(frozen=True)
class SymbolTables:
    """What the mask needs to know about each target id, as tensors.

    Attributes:
        kind: (V,) long, OTHER / OPEN / CLOSE / LEAF (`<unk>` is a leaf, the word of an unknown
            word; EOS is OTHER: it has its own rule).
        label: (V,) long, the label index of an open symbol (0 otherwise).
        closer: (L,) long, the target id of ``)L`` for label index l.
        opens: (V,) bool, True at open symbols.
        leaf_of_word: (V_src,) long, the target id of each source word's leaf symbol.
    """

    kind: Tensor
    label: Tensor
    closer: Tensor
    opens: Tensor
    leaf_of_word: Tensor

    @classmethod
    def build(cls, symbols: Vocabulary, leaf_of_word: list[int]) -> SymbolTables:
        tokens = symbols.to_json()["tokens"]
        labels = sorted({t[1:] for t in tokens if is_open(t)})
        index = {label: i for i, label in enumerate(labels)}
        kind = [OPEN if is_open(t) else CLOSE if is_close(t) else LEAF if i == UNK or i >= len(SPECIALS) else OTHER for i, t in enumerate(tokens)]
        ids = {t: i for i, t in enumerate(tokens)}
        closer = [ids.get(")" + label, EOS) for label in labels]
        return cls(
            kind=torch.tensor(kind),  # (V,)
            label=torch.tensor([index.get(t[1:], 0) if is_open(t) else 0 for t in tokens]),  # (V,)
            closer=torch.tensor(closer or [EOS]),  # (L,)
            opens=torch.tensor([k == OPEN for k in kind]),  # (V,)
            leaf_of_word=torch.tensor(leaf_of_word),  # (V_src,)
        )

    def to(self, device: torch.device) -> SymbolTables:
        return SymbolTables(*(t.to(device) for t in (self.kind, self.label, self.closer, self.opens, self.leaf_of_word)))


@dataclass
class Encoded:
    """`ConstrainedDecoder.encode`'s result: the model's memory and each word's leaf id."""

    memory: Any
    leaves: Tensor  # (B, S) target id of the leaf symbol of each source position


@dataclass
class ConstraintState:
    """The model's decoder state plus where each row's prefix stands (every tensor (R, ...))."""

    inner: Any
    leaves: Tensor  # (R, S) long
    n_words: Tensor  # (R,) long
    max_len: Tensor  # (R,) long, symbols allowed, EOS included (= the search's step limit)
    depth: Tensor  # (R,) long, open constituents
    covered: Tensor  # (R,) long, words written
    length: Tensor  # (R,) long, symbols written
    filled: Tensor  # (R,) bool, the innermost open constituent holds a word
    done: Tensor  # (R,) bool, the root has closed
    stack: Tensor  # (R, W) long, label index of each open constituent, outermost first


class ConstrainedDecoder:
    """`model` (a decoding-protocol model) with its outputs constrained to trees (module docstring).

    Args:
        model: The parser (`attnkit.models.transformer.Transformer`).
        tables: `SymbolTables` of its target vocabulary.
        max_len_a: The search's step limit is floor(a * S + b): give the search's own values.
        max_len_b: See `max_len_a`.
    """

    def __init__(self, model: Any, tables: SymbolTables, *, max_len_a: float, max_len_b: float) -> None:
        self.model, self.max_len_a, self.max_len_b = model, max_len_a, max_len_b
        self.tables = tables

    def encode(self, src: Tensor, src_keep: Tensor) -> Encoded:
        """src (B, S), src_keep (B, S) -> the memory and the leaf id of each word (B, S)."""
        tables = self.tables.to(src.device)
        leaves = tables.leaf_of_word[src.clamp(max=tables.leaf_of_word.numel() - 1)]  # (B, S)
        return Encoded(self.model.encode(src, src_keep), leaves)

    def init_state(self, memory: Encoded, src_keep: Tensor) -> ConstraintState:
        """Before the first symbol: nothing open, nothing covered."""
        B = src_keep.size(0)
        zeros = src_keep.new_zeros(B, dtype=torch.long)  # (B,)
        return ConstraintState(
            inner=self.model.init_state(memory.memory, src_keep),
            leaves=memory.leaves,
            n_words=src_keep.sum(dim=1) - 1,  # (B,) the source ends with EOS
            max_len=max_lengths(src_keep, self.max_len_a, self.max_len_b),  # (B,)
            depth=zeros,
            covered=zeros,
            length=zeros,
            filled=zeros.bool(),
            done=zeros.bool(),
            stack=src_keep.new_zeros((B, 1), dtype=torch.long),  # (B, 1)
        )

    def step(self, prev_tokens: Tensor, state: ConstraintState) -> tuple[Tensor, ConstraintState, Tensor]:
        """Read the previous symbol, run the model one step, mask what may not come next.

        Args:
            prev_tokens: (R, 1) the previous symbol (BOS first).
            state: From `init_state` or the previous step.

        Returns:
            logits (R, V) with -inf at every symbol not allowed, the new state, the model's
            cross-attention (R, S).
        """
        state = advance(state, prev_tokens[:, 0], self.tables.to(prev_tokens.device))
        logits, inner, attn = self.model.step(prev_tokens, state.inner)  # (R, V), state, (R, S)
        state.inner = inner
        keep = allowed(state, self.tables.to(logits.device), logits.size(-1))  # (R, V)
        return logits.masked_fill(~keep, float("-inf")), state, attn  # (R, V)


def advance(state: ConstraintState, token: Tensor, tables: SymbolTables) -> ConstraintState:
    """The state after each row's `token` (R,) (BOS and other specials change nothing)."""
    kind = tables.kind[token.clamp(max=tables.kind.numel() - 1)]  # (R,)
    is_open, is_close, is_leaf = kind == OPEN, kind == CLOSE, kind == LEAF  # (R,) each
    rows = torch.arange(token.numel(), device=token.device)  # (R,)
    stack = torch.cat([state.stack, state.stack.new_zeros(state.stack.size(0), 1)], dim=1)  # (R, W+1)
    slot = state.depth.clamp(max=stack.size(1) - 1)  # (R,)
    stack[rows, slot] = torch.where(is_open, tables.label[token], stack[rows, slot])  # (R,)
    depth = (state.depth + is_open.long() - is_close.long()).clamp(min=0)  # (R,)
    return ConstraintState(
        inner=state.inner,
        leaves=state.leaves,
        n_words=state.n_words,
        max_len=state.max_len,
        depth=depth,
        covered=state.covered + is_leaf.long(),  # (R,)
        length=state.length + (kind != OTHER).long(),  # (R,)
        filled=torch.where(is_open, False, state.filled | is_leaf | is_close),  # (R,)
        done=state.done | (is_close & (depth == 0)),  # (R,)
        stack=stack,
    )


def allowed(state: ConstraintState, tables: SymbolTables, vocab_size: int) -> Tensor:
    """(R, V) bool: the symbols each row may write next (`linear.LinearState.allows`)."""
    left = state.n_words - state.covered  # (R,) words still to cover
    room = state.length + 1 + left + state.depth + 1 + 1 <= state.max_len  # (R,) room to open one more
    may_open = ~state.done & (left > 0) & room  # (R,)
    keep = tables.opens[None, :vocab_size] & may_open[:, None]  # (R, V)
    has_leaf = (state.depth > 0) & (left > 0)  # (R,)
    position = state.covered.clamp(max=state.leaves.size(1) - 1)  # (R,)
    leaf = state.leaves.gather(1, position[:, None])  # (R, 1)
    keep = keep | (torch.nn.functional.one_hot(leaf[:, 0], vocab_size).bool() & has_leaf[:, None])  # (R, V)
    may_close = (state.depth > 0) & state.filled & ((state.depth > 1) | (left == 0))  # (R,)
    top = state.stack.gather(1, (state.depth - 1).clamp(min=0)[:, None])[:, 0]  # (R,)
    closer = tables.closer[top.clamp(max=tables.closer.numel() - 1)]  # (R,)
    keep = keep | (torch.nn.functional.one_hot(closer, vocab_size).bool() & may_close[:, None])  # (R, V)
    keep[:, EOS] = state.done | ~keep.any(dim=1)  # (R,) EOS after the root, or when nothing else is left
    return keep
