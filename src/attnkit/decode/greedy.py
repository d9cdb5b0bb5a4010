"""Batched greedy decoding through the `encode` / `init_state` / `step` protocol.

At each step every active sentence takes its most probable next token (the argmax of the
step's logits). A sentence stops at EOS or after `floor(max_len_a * source_length + max_len_b)`
steps; finished sentences leave the batch (`gather_beams`), so late steps run on fewer rows.
Greedy search is beam search with K = 1 (`attnkit.decode.beam.beam_search(beam=1)` returns the
same tokens and log-probabilities); it is kept as its own short loop because it is the one used
during training for validation BLEU.
"""

from __future__ import annotations

import itertools

import torch
from torch import Tensor

from attnkit.decode.beam_state import BeamState, gather_beams
from attnkit.decode.hypothesis import Decodable, Hypothesis, make_hypothesis, max_lengths
from attnkit.decode.scores import best_tokens, token_log_probs


@torch.inference_mode()
def greedy(
    model: Decodable,
    src: Tensor,
    src_keep: Tensor,
    *,
    max_len_a: float = 1.0,
    max_len_b: float = 50,
    bos: int,
    eos: int,
    return_attention: bool = False,
) -> list[Hypothesis]:
    """Decode a batch greedily.

    Runs under `torch.inference_mode`; put the model in `eval()` mode first (dropout).

    Args:
        model: implements `encode`, `init_state`, `step` (see `hypothesis.Decodable`).
        src: (B, S) long source tokens.
        src_keep: (B, S) bool, True at real (non-pad) source positions.
        max_len_a: the step limit is floor(max_len_a * source_length + max_len_b), at least 1.
        max_len_b: see max_len_a.
        bos: the token fed at the first step.
        eos: the token that ends a sentence.
        return_attention: record each step's cross-attention in `Hypothesis.attention`.

    Returns:
        One `Hypothesis` per sentence, in input order. Its score is its log-probability (no length
        penalty); `finished` is False for a sentence cut at the step limit.
    """
    state = model.init_state(model.encode(src, src_keep), src_keep)
    search = BeamState.start(max_lengths(src_keep, max_len_a, max_len_b), beam=1)
    prev = src.new_full((src.size(0), 1), bos)  # (B, 1)
    results: list[Hypothesis | None] = [None] * src.size(0)
    for t in itertools.count(1):
        logits, state, attn = model.step(prev, state)  # (N, V), state, (N, S)
        logits = logits.float()  # (N, V) once: CPU argmax is several times slower on bf16
        token = best_tokens(logits, 1)[1]  # (N, 1) the argmax
        token_log_prob = token_log_probs(logits, token).squeeze(1)  # (N,)
        token = token.squeeze(1)  # (N,)
        search = search.extend(token, search.log_prob + token_log_prob, attn if return_attention else None)
        ended = token == eos  # (N,)
        done = ended | (search.max_len <= t)  # (N,)
        for row in done.nonzero().squeeze(1).tolist():
            finished = bool(ended[row])
            tokens = search.tokens[row].tolist()
            sentence = int(search.sentence[row])
            results[sentence] = make_hypothesis(
                tokens[:-1] if finished else tokens,
                float(search.log_prob[row]),
                finished=finished,
                alpha=0.0,
                attention=None if search.attention is None else search.attention[row],
                src_keep=src_keep[sentence],
            )
        live = (~done).nonzero().squeeze(1)  # (N',)
        if live.numel() == 0:
            break
        if live.numel() < done.numel():  # drop finished sentences (no copy at steps where none finished)
            state, search = gather_beams(state, live), gather_beams(search, live)
        prev = search.tokens[:, -1:]  # (N', 1)
    return [hyp for hyp in results if hyp is not None]
