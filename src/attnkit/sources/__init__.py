"""Where the explorer's attention comes from: an attnkit run folder or a Hugging Face model.

`export_attention(source, text, out, options)` writes one `.npz` of every attention map of one
input (`attnkit attention`, docs/explorer.md) from either:

- an attnkit run folder (`run.json`): its family's attention views (`sources.run`);
- a Hugging Face model, as a folder `save_pretrained` wrote or a hub id (`sources.hf`).

Both hand each layer to the same `sources.collect.Collector`, which writes it into the npz
(`sources.npz`) and folds it into rollout (and flow). This package sits above the families (it
loads runs through the family table without naming a family) and below the commands.
"""

from __future__ import annotations

from pathlib import Path

from attnkit.sources.options import AttentionOptions

__all__ = ["AttentionOptions", "export_attention", "is_run"]


def is_run(source: str | Path) -> bool:
    """Whether `source` is an attnkit run folder (it has run.json)."""
    return (Path(source) / "run.json").is_file()


def export_attention(source: str, text: str | None, out: str | Path, options: AttentionOptions) -> dict:
    """Write the attention npz of `text` through `source`; returns a summary (counts, names written)."""
    if is_run(source):
        from attnkit.sources.run import export_run

        return export_run(source, text, out, options)
    from attnkit.sources.hf.export import export_hf
    from attnkit.sources.hf.load import load

    return export_hf(load(source), text, out, options)
