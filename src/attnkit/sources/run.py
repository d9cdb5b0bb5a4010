"""`attnkit attention` for an attnkit run folder, through its family's attention views.

The run's family decodes the line (as `attnkit plot` does: `Family.views`, the run's decode
settings, one hypothesis) and gives its `AttentionView`s, one per kind (a translation's `encoder`,
`decoder_self`, `cross`; a classifier's `hops`; a captioner's `cross` attention over the image grid).
Each layer goes through the same `Collector` as a Hugging Face model's. `tokens` are the keys of the
first kind, `target_tokens` the queries of the first kind whose role is "output" (`viz.attention_view`:
a decoder's cross or self-attention; the queries of other kinds, a classifier's hops, are no output). A view's `note` (a classifier's
class and probabilities) is written as `note` and goes into the summary. With `--words` the family
merges the pieces itself, and rollout and flow are computed on the word maps.

With `--attribute`, a family that scores an output (`Family.attribution`: a translation's output
token t, `families.translation.attribute`) writes its attributions (`sources.attribute`) and their
agreement with the rows of attention that output reads (`sources.agreement`, `output_row`): row t of
each decoder layer's cross attention, of the cross rollout C R_enc and of the flow, as for a Hugging
Face encoder-decoder model; a model with no cross attention has one output for all its query rows
(a classifier's hops), whose mean is compared. Other runs refuse `--attribute` in one line, as they
do `--attribute` with `--words` (the family merges pieces into words inside its views).
"""

from __future__ import annotations

from pathlib import Path

from attnkit.errors import AttnkitError
from attnkit.sources.collect import Collector
from attnkit.sources.npz import NpzWriter
from attnkit.sources.options import AttentionOptions


def output_row(views: list, output: int | None) -> tuple[str, int | None] | None:
    """(kind, query row) the explained output reads (the attributed one; flow's default rows): row t (`--attribute-target`, default 0) of the cross attention,
    else every row of the first kind (None: their mean); None when t is past the output (the family's
    score function says so in one line)."""
    cross = next((v for v in views if v.kind == "cross"), None)
    if cross is None:
        return views[0].kind, None
    t = output or 0
    return ("cross", t) if 0 <= t < len(cross.rows) else None


def _check(folder: Path, family, options: AttentionOptions) -> None:
    """One line for the options a run cannot take (module docstring)."""
    if options.target is not None:
        raise AttnkitError(f"{folder}: --target is for Hugging Face models; an attnkit run attends over its own output")
    if options.attribute and family.attribution is None:
        raise AttnkitError(
            f"{folder}: --attribute: a {family.name} run gives no score to attribute (translation and sentence-classifier runs do, as do Hugging Face models)"
        )
    if options.attribute and options.words:
        raise AttnkitError(f"{folder}: --attribute scores an attnkit run's pieces; leave out --words")


def write_run(loaded, text: str | None, writer: NpzWriter, options: AttentionOptions) -> dict:
    """Write the maps of one input of a loaded run (`families.load_run`) into `writer`; returns a summary."""
    from attnkit.families.protocol import ExploreOptions

    folder, family = loaded.folder, loaded.family
    _check(folder, family, options)
    line = options.image or text
    if line is None:
        raise AttnkitError(f"{folder}: give the input TEXT")
    views = family.views(loaded, [line], ExploreOptions(loaded.run.decode.with_overrides(nbest=1), words=options.words))[0]
    if not views:
        raise AttnkitError(f"{folder}: the model has no attention maps")
    target = next((v.rows for v in views if v.role == "output"), None)
    note = next((v.note for v in views if v.note), None)
    collector = Collector(writer, flow=options.flow, output=output_row(views, options.output))
    for view in views:
        for weights in view.layers:  # (H, Tq, Tk)
            collector(view.kind, weights)
        writer.add(f"{view.kind}/queries", view.rows)
        writer.add(f"{view.kind}/keys", view.cols)
    summaries = collector.finish()
    writer.add("tokens", views[0].cols)
    if target is not None:
        writer.add("target_tokens", target)
    summary = {"model": family.name, "kinds": dict(collector.layers), "tokens": len(views[0].cols), "prediction": " ".join(target or [])}
    if target is not None:
        summary["target_tokens"] = len(target)
    if note is not None:
        writer.add("note", [note])
        summary["note"] = note
    if options.attribute:
        from attnkit.sources.attribute import write_attributions

        f, x, label = family.attribution(loaded, line, options.output)
        summary.update(write_attributions(writer, f, x, label, options.attribute, collector=collector))
    return {**summary, "summaries": summaries}
