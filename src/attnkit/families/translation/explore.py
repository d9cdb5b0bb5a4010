"""Every attention map of a translation, ready to plot, embed in a report or serve as JSON.

`explore` decodes sentences (n-best; with the run's engine, `--engine`, if it has one; or takes a given translation,
`--target`: forced decoding), then re-runs
the best hypothesis teacher-forced through `model.attentions` (`teacher_forced`) to collect all maps
in the common format: encoder self-attention (source x source), decoder self-attention (output x
decoder input) and encoder-decoder attention (output x source), per layer and head. `merge_words` turns subword maps into word maps (`viz.words.merge_matrix`:
the weights of a word's pieces are summed over keys, so rows still sum to 1, and averaged over queries).

`explained` gives the core's `ExplainedInput` of a translation (`viz.attention_view`): the common
`source`, `text`, `nbest` and views, and as its fields `id`, `src`, `tgt` and `score` of the attention JSONL
format (`viz.export`); the core serializes it (`viz.records`). `api_attention` is what `POST /v1/translate`
adds: the search's attention (`attention`, [tgt][src]), which the record itself does not repeat (its `maps`
hold every layer).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import torch

from attnkit.artifacts.runs import LoadedRun
from attnkit.config.schema import Decode
from attnkit.data.vocab import SPECIALS
from attnkit.families.translation.attribute import forced
from attnkit.families.translation.codec import Vocabs
from attnkit.families.translation.teacher_forced import Maps, step_attention, teacher_forced
from attnkit.families.translation.translate import Translation, translate_run
from attnkit.viz.attention_view import CROSS, DECODER_SELF, ENCODER, AttentionView, ExplainedInput
from attnkit.viz.export import attention_record
from attnkit.viz.words import merge_matrix

KINDS = (ENCODER, DECODER_SELF, CROSS)  # the kinds of a translation's views (`Family.attention_kinds`)
WORD_START = "\u2581"  # SentencePiece's word-start mark (and the char tokenizer's space)


@dataclass
class ExploredTranslation:
    """A source sentence, its n-best translations and the attention maps of the best one."""

    index: int
    source: str
    nbest: list[Translation]
    views: list[AttentionView]


def explore_decode(decode: Decode, beam: int | None = None, alpha: float | None = None, nbest: int | None = None) -> Decode:
    """The run's decoding settings with the given overrides; nbest defaults to the beam size."""
    decode = decode.with_overrides(beam=beam, alpha=alpha)
    return decode.with_overrides(nbest=nbest or decode.beam)


def explore(loaded: LoadedRun, lines: Sequence[str], decode: Decode, *, maps: bool = True, words: bool = False,
            target: str | None = None) -> list[ExploredTranslation]:  # fmt: skip
    """Translate `lines` (with the run's engine, if it has one), or take `target` as each line's translation (`given`:
    forced decoding), and, with `maps`, collect every attention map of each best hypothesis in one teacher-forced pass;
    an engine's best hypotheses and a given target take their search attention from it."""
    searched = loaded.engine is None and target is None
    if target is None:
        results = translate_run(loaded, lines, decode, return_attention=maps and searched)
    else:
        results = [[given(loaded, line, target)] for line in lines]
    if not maps:
        views: list[list[AttentionView]] = [[] for _ in results]
    else:
        teacher = forced_maps(loaded.model, loaded.vocabs, [r[0] for r in results], decode.batch_size)
        views = [attention_views(r[0], f) for r, f in zip(results, teacher)]
        if not searched:
            results = [[replace(r[0], attention=step_attention(f)), *r[1:]] for r, f in zip(results, teacher)]
    explored = [ExploredTranslation(i, line, nbest, v) for i, (line, nbest, v) in enumerate(zip(lines, results, views))]
    return [merge_words(e) for e in explored] if words and loaded.vocabs.src_tokenizer.kind != "word" else explored


def given(loaded: LoadedRun, line: str, target: str) -> Translation:
    """`target` as the translation of `line` (`--target`, forced decoding; `attribute.forced`): its pieces, EOS last, and
    log P(target | line) as its score and log-probability (no length penalty)."""
    line = forced(loaded, line, target)
    with torch.no_grad():
        log_prob = float(line.scores(line.x[None]).sum())  # (1, T) summed
    text = loaded.vocabs.tgt_tokenizer.detokenize(line.tgt_pieces[:-1])
    return Translation(text, log_prob, log_prob, True, line.src_pieces, line.tgt_pieces, None)


def forced_maps(model: torch.nn.Module, vocabs: Vocabs, best: list[Translation], batch_size: int = 64) -> list[Maps]:
    """Every attention map of each hypothesis, from one teacher-forced pass (`teacher_forced`)."""
    outputs = [
        (vocabs.src_vocab.encode(t.src_pieces[:-1]), vocabs.tgt_vocab.encode(t.tgt_pieces[:-1] if t.finished else t.tgt_pieces), t.finished) for t in best
    ]  # fmt: skip  (pieces without the EOS)
    return teacher_forced(model, outputs, batch_size)


def attention_views(best: Translation, maps: Maps) -> list[AttentionView]:
    """A hypothesis' attention maps (`forced_maps`) as views, with their row and column labels."""
    labels = {"encoder": (best.src_pieces, best.src_pieces), "decoder_self": (best.tgt_pieces, ["<s>"] + best.tgt_pieces[:-1]),
              "cross": (best.tgt_pieces, best.src_pieces)}  # fmt: skip
    return [k.view(*labels[k.name], maps[k.name]) for k in KINDS if k.name in maps]


def word_groups(pieces: list[str]) -> list[list[int]]:
    """Indices of the pieces of each word: a piece starting with "▁" or a special token starts one."""
    groups: list[list[int]] = []
    for i, piece in enumerate(pieces):
        if not groups or piece.startswith(WORD_START) or piece in SPECIALS or pieces[i - 1] in SPECIALS:
            groups.append([i])
        else:
            groups[-1].append(i)
    return groups


def _words(pieces: list[str], groups: list[list[int]]) -> list[str]:
    return ["".join(pieces[i] for i in g).replace(WORD_START, "") or WORD_START for g in groups]


def merge_words(e: ExploredTranslation) -> ExploredTranslation:
    """The explanation with subword pieces merged into words in every map and the best hypothesis."""
    views = []
    for v in e.views:
        rows, cols = word_groups(v.rows), word_groups(v.cols)
        views.append(replace(v, rows=_words(v.rows, rows), cols=_words(v.cols, cols), layers=[merge_matrix(w, rows, cols) for w in v.layers]))
    best = e.nbest[0]
    src, tgt = word_groups(best.src_pieces), word_groups(best.tgt_pieces)
    attention = None if best.attention is None else merge_matrix(best.attention, tgt, src)
    best = replace(best, src_pieces=_words(best.src_pieces, src), tgt_pieces=_words(best.tgt_pieces, tgt), attention=attention)
    return replace(e, nbest=[best, *e.nbest[1:]], views=views)


def explained(e: ExploredTranslation) -> ExplainedInput:
    """An explanation as the core's `ExplainedInput`: its fields `id`, `src`, `tgt` and `score` (module docstring)."""
    best = e.nbest[0]
    fields = {"id": e.index, "src": best.src_pieces, "tgt": best.tgt_pieces, "score": best.score}
    nbest = [{"text": h.text, "score": round(h.score, 4), "finished": h.finished} for h in e.nbest]
    return ExplainedInput(e.source, best.text, e.views, nbest, fields=fields)


def api_attention(e: ExploredTranslation) -> list[list[float]] | None:
    """The best hypothesis' search attention [tgt][src] (rounded as in `viz.export`), or None without maps."""
    best = e.nbest[0]
    return None if best.attention is None else attention_record(e.index, best.src_pieces, best.tgt_pieces, best.attention)["attention"]
