"""The score a translation's attributions explain: log p(y_t | y_<t, x) as a function of the source embeddings.

`attnkit attention RUN TEXT --attribute ixg ig --attribute-target t` (`Family.attribution`) decodes the line
as the explorer does (the run's decoding settings, the best hypothesis: the output whose attention
the page and the npz show), then scores output position t of that hypothesis teacher-forced: the
decoder reads BOS and the hypothesis's own tokens before t, and f is the log-probability of the
token it emitted at t (`token_score`). The same output reads row t of each decoder layer's cross
attention (`sources.run`). `benchmarks/attention_analysis.py` scores a reference's tokens with the
same `token_score`.

One teacher-forced pass scores every output of the line (`token_scores`: (N, S, D) -> (N, T)); each output's f is
its column (`analysis.attribution.OutputOf`), and the outputs of a line share one, so that
`analysis.attribution.attributions_of_outputs` attributes them all in one batched forward and backward pass
(`sources.faithfulness.gradients`). `forced(loaded, line, target)` scores a given translation instead of the
search's (forced decoding, as inseq is handed a hypothesis: `benchmarks/vs_tools_runs.py`).

f replaces the output of the model's source embedding module (`src_embed`, before the
Transformer's sqrt(d_model) scaling and positions, or an RNN encoder's dropout) with the given
embeddings through a forward hook, so it holds for the Transformer and the RNN models alike; with a
joint vocabulary the module also embeds the target, and only its first call (the encoder's) is
replaced.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch
from torch import Tensor, nn

from attnkit.analysis.attribution import OutputOf, embeddings_replaced
from attnkit.artifacts.runs import LoadedRun
from attnkit.data.batching import collate
from attnkit.data.vocab import EOS
from attnkit.errors import AttnkitError
from attnkit.families.translation.codec import encode_sources
from attnkit.families.translation.translate import translate


def source_embeddings(model: nn.Module, src: Tensor) -> Tensor:
    """src (1, S) -> what the source embedding module gives, (S, D), float32 (the point f is attributed at)."""
    with torch.no_grad():
        return model.src_embed(src)[0].float()  # (S, D)


def token_scores(model: nn.Module, src: Tensor, src_keep: Tensor, tgt_in: Tensor, tokens: Sequence[int]) -> Callable[[Tensor], Tensor]:
    """F(source embeddings (N, S, D)) = log p(tokens[t] at position t | tgt_in[:, : t + 1], x) for every t: (N, T).

    `src`, `src_keep` (1, S) and `tgt_in` (1, T) are one teacher-forced example; each of the N embedded sources runs
    through the rest of the model as `model(src, src_keep, tgt_in)` does, and that one pass scores every output
    (`analysis.attribution.OutputOf` is one of them; `attributions_of_outputs` attributes them all in one batch).
    """
    index = torch.as_tensor(list(tokens), device=tgt_in.device).view(1, -1, 1)  # (1, T, 1)

    def scores(e: Tensor) -> Tensor:  # (N, S, D) -> (N, T)
        n = e.size(0)
        with embeddings_replaced(model.src_embed, e):  # a joint vocabulary: the decoder's call keeps its own output
            logits = model(src.expand(n, -1), src_keep.expand(n, -1), tgt_in.expand(n, -1))  # (N, T, V)
        return logits.float().log_softmax(dim=-1).gather(2, index.expand(n, -1, -1))[..., 0]  # (N, T)

    return scores


def token_score(model: nn.Module, src: Tensor, src_keep: Tensor, tgt_in: Tensor, t: int, token: int) -> Callable[[Tensor], Tensor]:
    """f(source embeddings (N, S, D)) = log p(token at position t | tgt_in[:, : t + 1], x) (N,) (`token_scores`' output t)."""
    tokens = [token] * tgt_in.size(1)  # only position t's is read
    return OutputOf(token_scores(model, src, src_keep, tgt_in, tokens), t)


@dataclass(frozen=True)
class Forced:
    """A translation of one line, teacher-forced: its pieces (EOS last where it finished), the score of every output
    (`token_scores`: (N, S, D) -> (N, T)) and the source embeddings it is attributed at (S, D)."""

    src_pieces: list[str]
    tgt_pieces: list[str]
    scores: Callable[[Tensor], Tensor]
    x: Tensor


_LAST: weakref.WeakKeyDictionary[nn.Module, tuple] = weakref.WeakKeyDictionary()  # model -> (line, target, decode, weights' versions, Forced)


def forced(loaded: LoadedRun, line: str, target: str | None = None) -> Forced:
    """The translation of `line` that the attributions score, made once for every output of the line (`faithfulness`
    scores them in turn): `target` (forced decoding: the given translation, tokenized as the run's targets, ending in
    EOS), else the best hypothesis under the run's decoding settings (one search)."""
    model, vocabs = loaded.model, loaded.vocabs
    decode = loaded.run.decode.with_overrides(nbest=1)
    tensors = [*model.parameters(), *model.buffers()]
    key = (line, target, repr(decode), tuple(t._version for t in tensors))  # _version: bumped by every in-place change (a head mask, a load)
    last = _LAST.get(model)
    if last is not None and last[:4] == key:
        return last[4]
    if target is None:
        best = translate(model, vocabs, [line], decode)[0][0]
        src_pieces, tgt_pieces, finished = best.src_pieces, best.tgt_pieces, best.finished
    else:
        src_pieces = encode_sources(vocabs, [line], decode.max_src_len)[0][0] + ["</s>"]
        tgt_pieces, finished = vocabs.tgt_tokenizer.tokenize(target) + ["</s>"], True
    # The emitted ids (EOS last when finished); as in the explorer's maps (`teacher_forced`) the decoder reads BOS
    # and all of them but the last.
    ids = vocabs.tgt_vocab.encode(tgt_pieces[:-1] if finished else tgt_pieces) + [EOS] * finished  # (T,)
    batch = collate([(vocabs.src_vocab.encode(src_pieces[:-1]), ids[:-1])], [0]).to(next(model.parameters()).device)
    out = Forced(src_pieces, tgt_pieces, token_scores(model, batch.src, batch.src_keep, batch.tgt_in, ids), source_embeddings(model, batch.src))
    _LAST[model] = (*key, out)
    return out


def score_function(loaded: LoadedRun, line: str, output: int | None, target: str | None = None) -> tuple[Callable[[Tensor], Tensor], Tensor, str]:
    """(f: source embeddings (N, S, D) -> log p(output t) (N,), the line's source embeddings (S, D), what f
    scores) for output position `output` (default 0) of the hypothesis the explorer shows (module docstring), or of
    the given `target` (`--target`); the outputs of one line share one `Forced.scores` (`analysis.attribution.OutputOf`)."""
    line_forced = forced(loaded, line, target)
    t = 0 if output is None else output
    if not 0 <= t < len(line_forced.tgt_pieces):
        raise AttnkitError(
            f"{loaded.folder}: --attribute-target {t}: the output has {len(line_forced.tgt_pieces)} positions ({' '.join(line_forced.tgt_pieces)})"
        )
    return OutputOf(line_forced.scores, t), line_forced.x, f"output {t} {line_forced.tgt_pieces[t]!r}"
