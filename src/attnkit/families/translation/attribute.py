"""The score a translation's attributions explain: log p(y_t | y_<t, x) as a function of the source embeddings.

`attnkit attention RUN TEXT --attribute ixg ig --attribute-target t` (`Family.attribution`) decodes the line
as the explorer does (the run's decoding settings, the best hypothesis: the output whose attention
the page and the npz show), then scores output position t of that hypothesis teacher-forced: the
decoder reads BOS and the hypothesis's own tokens before t, and f is the log-probability of the
token it emitted at t (`token_score`). The same output reads row t of each decoder layer's cross
attention (`sources.run`). `benchmarks/attention_analysis.py` scores a reference's tokens with the
same `token_score`.

f replaces the output of the model's source embedding module (`src_embed`, before the
Transformer's sqrt(d_model) scaling and positions, or an RNN encoder's dropout) with the given
embeddings through a forward hook, so it holds for the Transformer and the RNN models alike; with a
joint vocabulary the module also embeds the target, and only its first call (the encoder's) is
replaced.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import Any

import torch
from torch import Tensor, nn

from attnkit.analysis.attribution import embeddings_replaced
from attnkit.artifacts.runs import LoadedRun
from attnkit.data.batching import collate
from attnkit.data.vocab import EOS
from attnkit.errors import AttnkitError
from attnkit.families.translation.translate import translate


def source_embeddings(model: nn.Module, src: Tensor) -> Tensor:
    """src (1, S) -> what the source embedding module gives, (S, D), float32 (the point f is attributed at)."""
    with torch.no_grad():
        return model.src_embed(src)[0].float()  # (S, D)


def token_score(model: nn.Module, src: Tensor, src_keep: Tensor, tgt_in: Tensor, t: int, token: int) -> Callable[[Tensor], Tensor]:
    """f(source embeddings (N, S, D)) = log p(token at position t | tgt_in[:, : t + 1], x) (N,).

    `src`, `src_keep` (1, S) and `tgt_in` (1, T) are one teacher-forced example; each of the N
    embedded sources runs through the rest of the model as `model(src, src_keep, tgt_in)` does.
    """

    def f(e: Tensor) -> Tensor:  # (N, S, D) -> (N,)
        n = e.size(0)
        with embeddings_replaced(model.src_embed, e):  # a joint vocabulary: the decoder's call keeps its own output
            logits = model(src.expand(n, -1), src_keep.expand(n, -1), tgt_in.expand(n, -1))  # (N, T, V)
        return logits[:, t].float().log_softmax(dim=-1)[:, token]  # (N,)

    return f


_LAST: weakref.WeakKeyDictionary[nn.Module, tuple] = weakref.WeakKeyDictionary()  # model -> (line, decode, weights' versions, best)


def best_hypothesis(loaded: LoadedRun, line: str) -> Any:
    """The best hypothesis of `line` under the run's decoding settings, decoded once for every output of the line
    (`faithfulness` scores them in turn: one search per line instead of one per output token)."""
    decode = loaded.run.decode.with_overrides(nbest=1)
    tensors = [*loaded.model.parameters(), *loaded.model.buffers()]
    key = (line, repr(decode), tuple(t._version for t in tensors))  # _version: bumped by every in-place change (a head mask, a load)
    last = _LAST.get(loaded.model)
    if last is None or last[:3] != key:
        last = (*key, translate(loaded.model, loaded.vocabs, [line], decode)[0][0])
        _LAST[loaded.model] = last
    return last[3]


def score_function(loaded: LoadedRun, line: str, output: int | None) -> tuple[Callable[[Tensor], Tensor], Tensor, str]:
    """(f: source embeddings (N, S, D) -> log p(output t) (N,), the line's source embeddings (S, D), what f
    scores) for output position `output` (default 0) of the hypothesis the explorer shows (module docstring)."""
    model, vocabs = loaded.model, loaded.vocabs
    best = best_hypothesis(loaded, line)
    t = 0 if output is None else output
    if not 0 <= t < len(best.tgt_pieces):
        raise AttnkitError(f"{loaded.folder}: --attribute-target {t}: the output has {len(best.tgt_pieces)} positions ({' '.join(best.tgt_pieces)})")
    # The emitted ids (EOS last when the hypothesis finished); as in the explorer's maps
    # (`teacher_forced`) the decoder reads BOS and all of them but the last.
    ids = vocabs.tgt_vocab.encode(best.tgt_pieces[:-1] if best.finished else best.tgt_pieces) + [EOS] * best.finished  # (T,)
    batch = collate([(vocabs.src_vocab.encode(best.src_pieces[:-1]), ids[:-1])], [0]).to(next(model.parameters()).device)
    f = token_score(model, batch.src, batch.src_keep, batch.tgt_in, t, ids[t])
    return f, source_embeddings(model, batch.src), f"output {t} {best.tgt_pieces[t]!r}"
