"""Where the explorer's attention comes from: an attnkit run folder or a Hugging Face model.

Both are a `Source` (`sources.source`: `open_source`, `RunSource`, `HfSource`). `export_attention(source,
text, out, options)` writes one `.npz` of every attention map of one input (`attnkit attention`,
docs/explorer.md) from either:

- an attnkit run folder (`run.json`): its family's attention views (`sources.run`);
- a Hugging Face model, as a folder `save_pretrained` wrote or a hub id (`sources.hf`).

Both make one record per input (`sources.record.explain_inputs`, the one road to every output): each
layer goes to the same `sources.collect.Collector`, which keeps it as the output needs (here: written
into the npz at once, `sources.store.NpzStore`) and folds it into rollout (and flow); `sources.npz.write_record`
writes the rest. `write_attention` does the same through a source already opened; `sources.inputs` calls it
for each line of a file (`attnkit attention --input FILE --out DIR`). This package sits above the families (it loads runs through the family table without
naming a family) and below the commands.
"""

from __future__ import annotations

from pathlib import Path

from attnkit.sources.options import AttentionOptions
from attnkit.sources.source import Source, is_run, open_source

__all__ = ["AttentionOptions", "Source", "export_attention", "is_run", "open_source", "write_attention"]


def export_attention(source: str, text: str | None, out: str | Path, options: AttentionOptions) -> dict:
    """Write the attention npz of `text` through `source` (a path or hub id); returns a summary (counts, names written)."""
    return write_attention(open_source(source, options.checkpoint), text, out, options)


def write_attention(opened: Source, text: str | None, out: str | Path, options: AttentionOptions) -> dict:
    """Write the attention npz of `text` through an opened source (`open_source`); returns the summary of `export_attention`."""
    from attnkit.sources.npz import npz_writer, write_record
    from attnkit.sources.record import explain_inputs
    from attnkit.sources.store import NpzStore

    with npz_writer(out) as writer:
        (record,) = explain_inputs(opened, [text], options, lambda: NpzStore(writer))
        summary = write_record(writer, record)
    return {"out": str(out), **summary}
