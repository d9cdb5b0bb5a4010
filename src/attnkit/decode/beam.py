"""Batched beam search through the `encode` / `init_state` / `step` protocol.

The search follows fairseq's `SequenceGenerator` (Ott et al. 2019) and scores hypotheses with the
GNMT length penalty (Wu et al. 2016, eq. 14; written once in `attnkit.decode.hypothesis`):

1. The decoder state is expanded to B*K rows once, after `init_state`; beam 0 starts at log-prob
   0 and beams 1..K-1 at -inf, so the first step expands one copy of each sentence only.
2. Each step scores all K*V extensions of a sentence by cumulative log-probability and keeps the
   top 2K candidates. EOS candidates ranked in the top K are finished hypotheses (added to the
   sentence's list until it holds K); the K best non-EOS candidates are the next beams. Since a
   beam offers at most one EOS, 2K candidates always hold K non-EOS ones.
3. A sentence is done when it holds K finished hypotheses (fairseq's stopping rule) or when it
   has taken its `max_len` steps. Done sentences leave the batch, by the same `gather_beams` call
   that reorders the beams.
4. Its hypotheses are ranked by score log P(Y|X) / lp(Y). If fewer than `nbest` finished, the best
   beams still alive at the step limit fill the list, flagged `finished=False`.

The stopping rule is fairseq's rather than the exact bound (stop only once no alive beam, divided
by lp at the maximum length, could beat the K-th finished score): with it, beam 1 returns exactly
what greedy search returns for every alpha, and the search does not run to the step limit
whenever alpha > 0. The cost is that an alive beam which might still have overtaken a finished
hypothesis after length normalisation is not followed.

Nothing here depends on the other sentences of the batch: given a model whose `step` is
batch-invariant, a sentence decodes the same alone or in any padded batch.
"""

from __future__ import annotations

import itertools

import torch
from torch import Tensor

from attnkit.decode.beam_state import BeamState, expand_to_beams, gather_beams
from attnkit.decode.hypothesis import Decodable, Hypothesis, make_hypothesis, max_lengths
from attnkit.decode.scores import best_tokens, token_log_probs


@torch.inference_mode()
def beam_search(
    model: Decodable,
    src: Tensor,
    src_keep: Tensor,
    *,
    beam: int = 4,
    alpha: float = 0.6,
    nbest: int = 1,
    max_len_a: float = 1.0,
    max_len_b: float = 50,
    bos: int,
    eos: int,
    return_attention: bool = False,
) -> list[list[Hypothesis]]:
    """Decode a batch with beam search.

    Runs under `torch.inference_mode`; put the model in `eval()` mode first (dropout).

    Args:
        model: implements `encode`, `init_state`, `step` (see `hypothesis.Decodable`).
        src: (B, S) long source tokens.
        src_keep: (B, S) bool, True at real (non-pad) source positions.
        beam: K, the number of beams per sentence.
        alpha: length-penalty strength (0 ranks by raw log-probability).
        nbest: hypotheses returned per sentence, 1 <= nbest <= beam.
        max_len_a: the step limit is floor(max_len_a * source_length + max_len_b), at least 1.
        max_len_b: see max_len_a.
        bos: the token fed at the first step.
        eos: the token that ends a hypothesis.
        return_attention: record each step's cross-attention in `Hypothesis.attention`.

    Returns:
        For each sentence, in input order, `nbest` hypotheses (fewer only if the vocabulary is too
        small to make them), best first: finished ones by score, then unfinished ones.

    Raises:
        ValueError: if beam < 1 or nbest is not in [1, beam].
    """
    if beam < 1 or not 1 <= nbest <= beam:
        raise ValueError(f"beam search needs beam >= 1 and 1 <= nbest <= beam, got beam={beam}, nbest={nbest}")
    state = expand_to_beams(model.init_state(model.encode(src, src_keep), src_keep), beam)
    search = BeamState.start(max_lengths(src_keep, max_len_a, max_len_b), beam)
    prev = src.new_full((src.size(0) * beam, 1), bos)  # (B*K, 1)
    finished: list[list[Hypothesis]] = [[] for _ in range(src.size(0))]
    results: list[list[Hypothesis]] = [[] for _ in range(src.size(0))]
    for t in itertools.count(1):
        logits, state, attn = model.step(prev, state)  # (N*K, V), state, (N*K, S)
        attn = attn if return_attention else None
        scores, rows, tokens = top_candidates(search.log_prob, logits, beam)  # (N, 2K) each
        _finish_eos(finished, search, scores, rows, tokens, attn, eos=eos, beam=beam, alpha=alpha, src_keep=src_keep)
        alive = first_non_eos(tokens, eos, beam)  # (N, K)
        rows = rows.gather(1, alive).view(-1)  # (N*K,)
        search = gather_beams(search, rows).extend(
            tokens.gather(1, alive).view(-1),  # (N*K,)
            scores.gather(1, alive).view(-1),  # (N*K,)
            None if attn is None else attn.index_select(0, rows),  # (N*K, S)
        )
        counts = torch.tensor([len(finished[s]) for s in search.sentence[::beam].tolist()])  # (N,)
        done = (counts.to(search.max_len.device) >= beam) | (search.max_len[::beam] <= t)  # (N,)
        for n in done.nonzero().squeeze(1).tolist():
            sentence = int(search.sentence[n * beam])
            results[sentence] = _nbest(finished[sentence], search, n, beam=beam, nbest=nbest, alpha=alpha, src_keep=src_keep[sentence])
        live = (~done).nonzero().squeeze(1)  # (N',)
        if live.numel() == 0:
            break
        keep = (live.unsqueeze(1) * beam + torch.arange(beam, device=live.device)).view(-1)  # (N'*K,)
        search = gather_beams(search, keep)
        state = gather_beams(state, rows.index_select(0, keep), beam)  # reorder and drop in one gather
        prev = search.tokens[:, -1:]  # (N'*K, 1)
    return results


def top_candidates(log_prob: Tensor, logits: Tensor, beam: int) -> tuple[Tensor, Tensor, Tensor]:
    """The 2K best one-token extensions of each sentence, by cumulative log-probability.

    A sentence's 2K best extensions are among the 2K best tokens of each of its beams, and within
    a beam the logits rank tokens as the log-probabilities do, so each row's best logits are picked
    first (`scores.best_tokens`) and only those get cumulative scores: the (N*K, V) cumulative
    scores are never written.

    Args:
        log_prob: (N*K,) cumulative log-probability of each beam.
        logits: (N*K, V) this step's logits (V >= 2).
        beam: K.

    Returns:
        scores (N, 2K) cumulative log-probabilities, best first; rows (N, 2K) the parent beam's row
        in 0..N*K-1; tokens (N, 2K) the token appended.
    """
    logits = logits.float()  # (N*K, V) once, as greedy search does
    per_row = min(2 * beam, logits.size(-1))
    _, best = best_tokens(logits, per_row)  # (N*K, P)
    step_log_prob = token_log_probs(logits, best)  # (N*K, P)
    cand = (log_prob.unsqueeze(1) + step_log_prob).view(-1, beam * per_row)  # (N, K*P)
    scores, flat = cand.topk(2 * beam, dim=1)  # (N, 2K)
    offset = torch.arange(cand.size(0), device=cand.device).unsqueeze(1) * beam  # (N, 1)
    rows = offset + torch.div(flat, per_row, rounding_mode="floor")  # (N, 2K)
    return scores, rows, best.view(cand.size(0), -1).gather(1, flat)


def first_non_eos(tokens: Tensor, eos: int, beam: int) -> Tensor:
    """Positions of the first K non-EOS candidates of each sentence, in rank order.

    Args:
        tokens: (N, 2K) candidate tokens, best first.
        eos: the EOS id.
        beam: K.

    Returns:
        (N, K) long positions into the 2K candidates.
    """
    is_eos = (tokens == eos).to(torch.uint8)  # (N, 2K)
    return is_eos.sort(dim=1, stable=True).indices[:, :beam]  # (N, K)


def _finish_eos(
    finished: list[list[Hypothesis]],
    search: BeamState,
    scores: Tensor,
    rows: Tensor,
    tokens: Tensor,
    attn: Tensor | None,
    *,
    eos: int,
    beam: int,
    alpha: float,
    src_keep: Tensor,
) -> None:
    """Move EOS candidates ranked in the top K to their sentence's finished list (at most K each).

    Candidates at -inf (possible only when the vocabulary has fewer than 2K tokens) are skipped.
    """
    top = (tokens[:, :beam] == eos) & torch.isfinite(scores[:, :beam])  # (N, K)
    for n, j in top.nonzero().tolist():
        row = int(rows[n, j])
        sentence = int(search.sentence[row])
        if len(finished[sentence]) >= beam:
            continue
        attention = None
        if attn is not None and search.attention is not None:
            attention = torch.cat([search.attention[row], attn[row].unsqueeze(0)])  # (t, ..., S)
        elif attn is not None and search.tokens.size(1) == 0:
            attention = attn[row].unsqueeze(0)  # (1, ..., S)
        hyp = make_hypothesis(
            search.tokens[row].tolist(),
            float(scores[n, j]),
            finished=True,
            alpha=alpha,
            attention=attention,
            src_keep=src_keep[sentence],
        )
        finished[sentence].append(hyp)


def _nbest(finished: list[Hypothesis], search: BeamState, n: int, *, beam: int, nbest: int, alpha: float, src_keep: Tensor) -> list[Hypothesis]:
    """The n-best list of the n-th active sentence: finished by score, then alive beams if short.

    Alive beams all have the same length, so their rank by log-probability (the order `search`
    keeps them in) is their rank by score. Beams at -inf are used only if nothing else is left.
    """
    best = sorted(finished, key=lambda hyp: hyp.score, reverse=True)[:nbest]
    for row in range(n * beam, (n + 1) * beam):
        if len(best) >= nbest:
            break
        log_prob = float(search.log_prob[row])
        if log_prob == float("-inf") and best:
            break
        best.append(
            make_hypothesis(
                search.tokens[row].tolist(),
                log_prob,
                finished=False,
                alpha=alpha,
                attention=None if search.attention is None else search.attention[row],
                src_keep=src_keep,
            )
        )
    return best
