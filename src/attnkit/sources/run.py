"""`attnkit attention` for an attnkit run folder, through its family's attention views.

The run's family decodes the line (as `attnkit plot` does: `Family.views`, the run's decode
settings, one hypothesis) and gives its `AttentionView`s, one per kind (a translation's `encoder`,
`decoder_self`, `cross`; a classifier's hops; a captioner's attention over the image grid). Each
layer goes through the same `Collector` as a Hugging Face model's. `tokens` are the keys of the
first kind, `target_tokens` the queries of the first kind whose queries differ from them (a
translation's output). With `--words` the family merges the pieces itself, and rollout and flow
are computed on the word maps.
"""

from __future__ import annotations

from pathlib import Path

from attnkit.errors import AttnkitError
from attnkit.sources.collect import Collector
from attnkit.sources.npz import NpzWriter, npz_writer
from attnkit.sources.options import AttentionOptions


def write_run(loaded, text: str | None, writer: NpzWriter, options: AttentionOptions) -> dict:
    """Write the maps of one input of a loaded run (`families.load_run`) into `writer`; returns a summary."""
    from attnkit.families.protocol import ExploreOptions

    folder = loaded.folder
    if options.target is not None or options.attribute:
        what = "--target" if options.target is not None else "--attribute"
        raise AttnkitError(f"{folder}: {what} is for Hugging Face models; an attnkit run attends over its own output")
    line = options.image or text
    if line is None:
        raise AttnkitError(f"{folder}: give the input TEXT")
    views = loaded.family.views(loaded, [line], ExploreOptions(loaded.run.decode.with_overrides(nbest=1), words=options.words))[0]
    if not views:
        raise AttnkitError(f"{folder}: the model has no attention maps")
    target = next((v.rows for v in views if v.rows != views[0].cols), None)
    collector = Collector(writer, flow=options.flow)
    for view in views:
        for weights in view.layers:  # (H, Tq, Tk)
            collector(view.kind, weights)
        writer.add(f"{view.kind}/queries", view.rows)
        writer.add(f"{view.kind}/keys", view.cols)
    summaries = collector.finish()
    writer.add("tokens", views[0].cols)
    if target is not None:
        writer.add("target_tokens", target)
    summary = {"model": loaded.family.name, "kinds": dict(collector.layers), "tokens": len(views[0].cols), "prediction": " ".join(target or [])}
    return {**summary, **({"target_tokens": len(target)} if target is not None else {}), "summaries": summaries}


def export_run(folder: str | Path, text: str | None, out: str | Path, options: AttentionOptions) -> dict:
    """Write the npz of one input of an attnkit run; returns a summary for the command line."""
    from attnkit.families import load_run

    if options.target is not None or options.attribute:  # before the run loads
        what = "--target" if options.target is not None else "--attribute"
        raise AttnkitError(f"{folder}: {what} is for Hugging Face models; an attnkit run attends over its own output")
    loaded = load_run(folder, options.checkpoint)
    with npz_writer(out) as writer:
        summary = write_run(loaded, text, writer, options)
    return {"out": str(out), **summary}
