"""Toy models implementing the decoding protocol, for the decode tests.

- `ScriptedDecoder`: next-token probabilities read from a table keyed by (sentence, prefix), as in
  fairseq's beam-search tests, so expected beams and scores can be worked out by hand.
- `ToyGRU`: embedding + GRUCell + dot attention over the memory + linear, random weights; its
  `step` is batch-invariant (padding is masked out of the attention), and its state nests tensors
  in a list, a tuple and a dataclass to exercise `gather_beams`.

Vocabulary of both: PAD 0, UNK 1, BOS 2, EOS 3, then A 4, B 5, C 6 (the ToyGRU has more).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import torch
from torch import Tensor, nn

PAD, UNK, BOS, EOS, A, B, C = range(7)
TAIL = [0.005, 0.01, 0.015]  # P(PAD), P(UNK), P(BOS) in every scripted row: distinct, so no ties


def row(eos: float, a: float, b: float, c: float) -> list[float]:
    """A scripted distribution over the 7 tokens; the probabilities must sum to 1."""
    probs = TAIL + [eos, a, b, c]
    assert math.isclose(sum(probs), 1.0), probs
    return probs


DEFAULT_ROW = row(0.5, 0.2, 0.17, 0.1)  # used for any prefix the script does not list


@dataclass
class ScriptState:
    sentence: Tensor  # (B,) the script each row follows (src[:, 0])
    src_keep: Tensor  # (B, S)
    prefix: Tensor  # (B, t) tokens generated so far
    steps: int = 0  # a plain int the search must carry along untouched


class ScriptedDecoder:
    """p(next | sentence, prefix) = script[sentence][prefix] (DEFAULT_ROW when absent).

    The cross-attention of a step is one-hot at source position sum(prefix) % src_len, so it
    depends on the beam's history: a wrongly reordered attention history shows up in the tests.
    """

    vocab = 7

    def __init__(self, script: dict[int, dict[tuple[int, ...], list[float]]]) -> None:
        self.script = script

    def encode(self, src: Tensor, src_keep: Tensor) -> Tensor:
        return src  # (B, S)

    def init_state(self, memory: Tensor, src_keep: Tensor) -> ScriptState:
        return ScriptState(memory[:, 0].clone(), src_keep, memory.new_zeros((memory.size(0), 0)))

    def step(self, prev_tokens: Tensor, state: ScriptState) -> tuple[Tensor, ScriptState, Tensor]:
        prefix = state.prefix if state.steps == 0 else torch.cat([state.prefix, prev_tokens], dim=1)  # (B, t)
        probs, attn = [], torch.zeros(state.src_keep.shape)  # (B, S)
        for b, (sentence, tokens) in enumerate(zip(state.sentence.tolist(), prefix.tolist())):
            probs.append(self.script.get(sentence, {}).get(tuple(tokens), DEFAULT_ROW))
            attn[b, sum(tokens) % int(state.src_keep[b].sum())] = 1.0  # kept positions come first
        log_probs = torch.tensor(probs).log()  # (B, V)
        return log_probs, ScriptState(state.sentence, state.src_keep, prefix, state.steps + 1), attn


# The hand-worked script of tests/decode/test_beam.py (sentence 7).
SCRIPT_7 = {
    (): row(0.05, 0.45, 0.35, 0.12),
    (A,): row(0.6, 0.05, 0.2, 0.12),
    (B,): row(0.09, 0.75, 0.08, 0.05),
    (C,): row(0.4, 0.25, 0.12, 0.2),
    (B, A): row(0.95, 0.005, 0.01, 0.005),
    (A, B): row(0.5, 0.2, 0.1, 0.17),
    (A, C): row(0.35, 0.25, 0.22, 0.15),
}


def scripted_src(sentence: int, length: int, pad_to: int) -> tuple[Tensor, Tensor]:
    """A (1, pad_to) source whose first token selects the script, and its keep-mask."""
    src = torch.full((1, pad_to), PAD)
    src[0, :length] = torch.tensor([sentence] + [A] * (length - 1))
    return src, src != PAD


@dataclass
class Inner:
    context: Tensor  # (B, D) last attention context
    history: list[Tensor] = field(default_factory=list)  # [(B, D)] hidden states, last 2 kept


@dataclass
class GRUState:
    hidden: Tensor  # (B, D)
    memory: Tensor  # (B, S, D)
    src_keep: Tensor  # (B, S)
    nested: tuple[Inner, None, int]


class ToyGRU(nn.Module):
    """embedding + GRUCell + dot attention + linear: a tiny RNN attention decoder."""

    def __init__(self, vocab: int = 13, d_model: int = 16, seed: int = 0, eos_ramp: float = 2.0) -> None:
        super().__init__()
        self.eos_ramp = eos_ramp
        torch.manual_seed(seed)
        self.embed = nn.Embedding(vocab, d_model)
        self.enc = nn.Linear(d_model, d_model)
        self.cell = nn.GRUCell(2 * d_model, d_model)
        self.out = nn.Linear(2 * d_model, vocab)
        with torch.no_grad():
            self.out.weight.mul_(4.0)  # peaked, input-dependent distributions

    def encode(self, src: Tensor, src_keep: Tensor) -> Tensor:
        return torch.tanh(self.enc(self.embed(src)))  # (B, S, D)

    def init_state(self, memory: Tensor, src_keep: Tensor) -> GRUState:
        keep = src_keep.unsqueeze(-1).float()  # (B, S, 1)
        mean = (memory * keep).sum(1) / keep.sum(1)  # (B, D)
        return GRUState(mean, memory, src_keep, (Inner(torch.zeros_like(mean), [mean]), None, 0))

    def step(self, prev_tokens: Tensor, state: GRUState) -> tuple[Tensor, GRUState, Tensor]:
        inner = state.nested[0]
        x = torch.cat([self.embed(prev_tokens[:, 0]), inner.context], dim=-1)  # (B, 2D)
        hidden = self.cell(x, state.hidden)  # (B, D)
        scores = torch.einsum("bsd,bd->bs", state.memory, hidden)  # (B, S)
        weights = scores.masked_fill(~state.src_keep, float("-inf")).softmax(-1)  # (B, S)
        context = torch.einsum("bs,bsd->bd", weights, state.memory)  # (B, D)
        logits = self.out(torch.cat([hidden, context], -1))  # (B, V)
        logits[:, EOS] += self.eos_ramp * (state.nested[2] - 3)  # EOS grows likelier with each step
        log_probs = logits.log_softmax(-1)  # (B, V)
        nested = (Inner(context, (inner.history + [hidden])[-2:]), None, state.nested[2] + 1)
        return log_probs, GRUState(hidden, state.memory, state.src_keep, nested), weights


def random_batch(n: int, seed: int, vocab: int = 13, max_len: int = 7) -> tuple[Tensor, Tensor]:
    """n right-padded sources of lengths 2..max_len over tokens 4..vocab-1, ending with EOS."""
    gen = torch.Generator().manual_seed(seed)
    lengths = torch.randint(2, max_len + 1, (n,), generator=gen)
    src = torch.full((n, max_len), PAD)
    for i, length in enumerate(lengths.tolist()):
        src[i, : length - 1] = torch.randint(4, vocab, (length - 1,), generator=gen)
        src[i, length - 1] = EOS
    return src, src != PAD
