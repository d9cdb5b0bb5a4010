"""`attnkit attention` for a Hugging Face model: one forward pass, each layer written as it comes.

The npz holds `tokens` (vision: "[CLS]" and "patch r,c"), for an encoder-decoder model
`target_tokens` (the decoder's input) and `output_tokens`, for a vision model `grid`; per kind and
layer `<kind>/layer<l>` (H, Tq, Tk) float32 as the model gave it, with `<kind>/queries` and
`<kind>/keys`; `rollout` (and `rollout_encoder`, `flow`: `sources.collect`); and with attribution
methods `attr/<method>` (T,), `attr/output` (what was scored) and, for integrated gradients,
`attr/ig_steps` and `attr/ig_relative_error` (completeness), `attr/row` (the query row the output
is read at) and its agreement with attention, rollout and flow, `tau/...` (`sources.agreement`).
"""

from __future__ import annotations

import torch

from attnkit.errors import AttnkitError
from attnkit.sources.collect import Collector, Groups
from attnkit.sources.hf.collect import collecting
from attnkit.sources.hf.inputs import Prepared, prepare, vision_tokens
from attnkit.sources.hf.load import HfModel
from attnkit.sources.hf.long.budget import check_eager, shape_of
from attnkit.sources.npz import NpzWriter
from attnkit.sources.options import AttentionOptions
from attnkit.viz.words import join_pieces, word_groups


def _labels(prep: Prepared, kind: str) -> tuple[list[str], list[str]]:
    """(queries, keys) of a kind."""
    target = prep.target_tokens or []
    return {"decoder_self": (target, target), "cross": (target, prep.tokens)}.get(kind, (prep.tokens, prep.tokens))


def _groups(prep: Prepared) -> dict[str, Groups]:
    src = word_groups(prep.tokens, prep.specials)
    tgt = word_groups(prep.target_tokens or [], prep.specials)
    return {"encoder": Groups(src, src), "self": Groups(src, src), "decoder_self": Groups(tgt, tgt), "cross": Groups(tgt, src)}


def _write_labels(writer: NpzWriter, prep: Prepared, kinds: list[str], words: bool) -> None:
    def name(tokens: list[str]) -> list[str]:
        return join_pieces(tokens, word_groups(tokens, prep.specials)) if words else tokens

    writer.add("tokens", name(prep.tokens))
    if prep.target_tokens is not None:
        writer.add("target_tokens", name(prep.target_tokens))
        writer.add("output_tokens", prep.output_tokens)
    if prep.grid is not None:
        writer.add("grid", torch.tensor(prep.grid).numpy())
    for kind in kinds:
        rows, cols = _labels(prep, kind)
        writer.add(f"{kind}/queries", name(rows))
        writer.add(f"{kind}/keys", name(cols))


def _output_row(hf: HfModel, prep: Prepared, options: AttentionOptions) -> tuple[str, int] | None:
    """(kind, query row as written) the explained output is read at: the row flow computes by default and the
    attributions are compared with (`sources.agreement`); a vision model's class is read at [CLS], row 0."""
    if hf.arch == "vision":
        return "encoder", 0
    kind, piece = {"encoder": ("encoder", 0), "decoder": ("self", len(prep.tokens) - 1)}.get(hf.arch, ("cross", options.output or 0))
    if kind == "cross" and not 0 <= piece < len(prep.target_tokens or []):
        return None  # the attribution refuses it, in one line
    if not options.words:
        return kind, piece
    return kind, next(w for w, g in enumerate(_groups(prep)[kind].rows) if piece in g)


def _attribute(writer: NpzWriter, hf: HfModel, prep: Prepared, options: AttentionOptions, collector: Collector) -> dict:
    from attnkit.sources.attribute import write_attributions
    from attnkit.sources.hf.attribute import score_function

    f, x, label = score_function(hf, prep, options.output)
    groups = word_groups(prep.tokens, prep.specials) if options.words else None
    return write_attributions(writer, f, x, label, options.attribute, groups, collector)


def _prediction(hf: HfModel, prep: Prepared, out) -> str:
    """What the model made of the input, in words: the output text, a class, or the next token."""
    if prep.output_ids is not None:
        return hf.tokenizer.decode(prep.output_ids, skip_special_tokens=True)
    logits = getattr(out, "logits", None)
    if logits is None:
        return ""
    best = int(logits[0, -1].argmax()) if logits.dim() == 3 else int(logits[0].argmax())  # (1, T, V) or (1, C)
    if logits.dim() == 3 and hf.tokenizer is not None:
        return f"next token: {hf.tokenizer.convert_ids_to_tokens(best)}"
    labels = getattr(hf.model.config, "id2label", None) or {}
    return f"class: {labels.get(best, best)}"


def write_hf(hf: HfModel, text: str | None, writer: NpzWriter, options: AttentionOptions) -> dict:
    """Write the maps of `text` (or `options.image`) through `hf` into `writer`; returns a summary."""
    if options.words and hf.arch == "vision":
        raise AttnkitError(f"{hf.name}: --words merges text pieces; this is a vision model")
    prep = prepare(hf, text, options)
    if hf.arch in ("encoder", "decoder"):
        check_eager(hf.name, shape_of(hf.model), len(prep.tokens), options.max_memory)
    collector = Collector(writer, flow=options.flow, words=_groups(prep) if options.words else {}, output=_output_row(hf, prep, options))
    with collecting(hf.model, hf.arch, collector), torch.inference_mode():
        out = hf.model(**prep.inputs)
    if hf.arch == "vision":
        prep.tokens = vision_tokens(prep, collector.shapes["encoder"][-1])
    summaries = collector.finish()
    _write_labels(writer, prep, list(collector.layers), options.words)
    summary = {"model": type(hf.model).__name__, "kinds": dict(collector.layers), "tokens": len(prep.tokens), "prediction": _prediction(hf, prep, out)}
    if prep.target_tokens is not None:
        summary["target_tokens"] = len(prep.target_tokens)
    if options.attribute:
        summary.update(_attribute(writer, hf, prep, options, collector))
    return {**summary, "summaries": summaries}
