"""The parser: the Transformer with a word pointer and a tagger (both options of `model`).

**The word pointer** (`model.pointer`). A linearised tree (`linear.linearise`) writes its words
left to right, so before each output symbol the word that the next leaf will be is known: the
word after the leaves written so far. The plain Transformer must infer that position by counting
leaves through its self-attention and find the word through cross-attention, which it learns
poorly from a few thousand trees (docs/parse.md). Ma et al. (2017, "Deterministic Attention for
Sequence-to-Sequence Constituent Parsing") give an LSTM parser's decoder the encoder states at
that position instead of learning where to look; the pointer does the same for the Transformer,
as one more term of the decoder input (sec. 3.4):

    x_t = Emb(y_{t-1}) * sqrt(d_model) + W_p h_{p_t} + PE(t),    p_t = leaves among y_{<t}

where h (S, D) is the encoder output and p_t stops at the source EOS once every word is written.
Cross-attention is unchanged, so the attention maps still show where the decoder looks.

**The tagger** (`model.tagger`). Vinyals et al. (2015) drop the POS tags from the target. Here a
linear layer reads each encoder state and predicts its word's tag, P(tag_i) = softmax(W_t h_i),
trained with the parse (its loss added, `task.batch_loss`): the tags teach the encoder word
classes that a few thousand trees teach slowly, and `parse` prints the predicted tags in its trees.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor, nn

from attnkit.decode.beam_state import per_sentence
from attnkit.models.transformer import HeadMask, Transformer, TransformerState


@dataclass
class ParserState:
    """The Transformer's decoding state plus the word pointer of each row."""

    inner: TransformerState
    covered: Tensor  # (R,) long, leaves written (the pointer before clamping)
    pointed: Tensor = per_sentence()  # (B, S, D) W_p h: the decoder input of each word position
    last: Tensor = per_sentence()  # (B,) long, the position of the source EOS


class Parser(Transformer):
    """`Transformer` plus the word pointer and/or the tagger (module docstring).

    Args:
        leaves: (V,) True at the target's leaf symbols (what the pointer counts).
        pointer: Add W_p h_{p_t} to the decoder input.
        n_tags: Size of the tag vocabulary; 0 for no tagger.
        **kwargs: The `Transformer`'s.
    """

    def __init__(self, *, leaves: Sequence[bool], pointer: bool, n_tags: int = 0, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.register_buffer("is_leaf", torch.tensor(list(leaves), dtype=torch.bool), persistent=False)  # (V,)
        self.pointer = nn.Linear(self.d_model, self.d_model, bias=False) if pointer else None  # W_p
        self.tagger = nn.Linear(self.d_model, n_tags) if n_tags else None  # W_t
        for layer in (self.pointer, self.tagger):
            if layer is not None:
                nn.init.xavier_uniform_(layer.weight)

    def tag_logits(self, memory: Tensor) -> Tensor:
        """Encoder output (B, S, D) -> tag logits (B, S, n_tags)."""
        assert self.tagger is not None
        return self.tagger(memory)  # (B, S, n_tags)

    def pointers(self, tgt_in: Tensor, src_keep: Tensor) -> Tensor:
        """tgt_in (B, T), src_keep (B, S) -> p (B, T): leaves among tgt_in[:, :t+1], at most the EOS position."""
        last = src_keep.sum(dim=1, keepdim=True) - 1  # (B, 1)
        return torch.minimum(self.is_leaf[tgt_in].long().cumsum(dim=1), last)  # (B, T)

    def word_inputs(self, memory: Tensor, src_keep: Tensor, tgt_in: Tensor) -> Tensor | None:
        """W_p h_{p_t} for every target position: memory (B, S, D) -> (B, T, D) (None without the pointer)."""
        if self.pointer is None:
            return None
        p = self.pointers(tgt_in, src_keep)  # (B, T)
        return self.pointer(memory).gather(1, p[..., None].expand(-1, -1, memory.size(-1)))  # (B, T, D)

    def decode(
        self, tgt_in: Tensor, memory: Tensor, src_keep: Tensor, need_weights: bool = False, inputs: Tensor | None = None, head_mask: HeadMask | None = None
    ) -> tuple[Tensor, list]:
        """The Transformer's teacher-forced decoder pass with the word pointer's inputs."""
        inputs = self.word_inputs(memory, src_keep, tgt_in) if inputs is None else inputs  # (B, T, D)
        return super().decode(tgt_in, memory, src_keep, need_weights, inputs, head_mask)

    def init_state(self, memory: Tensor, src_keep: Tensor) -> ParserState | TransformerState:  # type: ignore[override]
        """The Transformer's state, and with the pointer W_p h once per sentence and no leaves written."""
        inner = super().init_state(memory, src_keep)
        if self.pointer is None:
            return inner
        return ParserState(
            inner=inner,
            pointed=self.pointer(memory),  # (B, S, D)
            last=src_keep.sum(dim=1) - 1,  # (B,)
            covered=src_keep.new_zeros(src_keep.size(0), dtype=torch.long),  # (B,)
        )

    def step(self, prev_tokens: Tensor, state: Any, inputs: Tensor | None = None, head_mask: HeadMask | None = None) -> tuple[Tensor, Any, Tensor]:
        """The Transformer's step (prev_tokens (R, 1)) with W_p h_{p_t} added to its input (and `head_mask`, as the Transformer's)."""
        if not isinstance(state, ParserState):
            return super().step(prev_tokens, state, inputs, head_mask)
        covered = state.covered + self.is_leaf[prev_tokens[:, 0]].long()  # (R,)
        R, B = covered.size(0), state.pointed.size(0)
        sentence = torch.arange(R, device=covered.device) // (R // B)  # (R,) K = R / B rows a sentence
        inputs = state.pointed[sentence, torch.minimum(covered, state.last[sentence])][:, None]  # (R, 1, D)
        logits, inner, attn = super().step(prev_tokens, state.inner, inputs, head_mask)  # (R, V), state, (R, S)
        return logits, ParserState(inner, covered, state.pointed, state.last), attn
