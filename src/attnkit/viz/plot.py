"""`attnkit plot`: PNG heatmaps of every attention map of a model's output (via `viz.heatmap`).

A family's `views` gives, per input line, its `AttentionView`s: one per kind of attention (for a
translation: `encoder`, `decoder_self`, `cross`), each with its layers of heads. Per line `i`, kind
and layer `l` (1-based): one file per head, `{i:03d}-{kind}-layer{l}-head{h}.png`, and the head
average, `{i:03d}-{kind}-layer{l}-mean.png` (written only when the layer has more than one head).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from torch import Tensor

from attnkit.errors import AttnkitError
from attnkit.viz.heatmap import plot_attention


@dataclass
class AttentionView:
    """One kind of attention of one input: per layer (H, Tq, Tk), rows = queries, cols = keys."""

    kind: str
    rows: list[str]
    cols: list[str]
    layers: list[Tensor]
    title: str  # e.g. "encoder-decoder attention"
    axes: tuple[str, str]  # (x label: the keys, y label: the queries)
    note: str | None = None  # what the maps do not show of the model's answer (a classifier's class and probabilities)


def plot_maps(views: list[list[AttentionView]], out_dir: str | Path) -> list[Path]:
    """Write the heatmaps of each input's views into `out_dir`; returns the files written."""
    out_dir = Path(out_dir)
    if out_dir.exists() and not out_dir.is_dir():
        raise AttnkitError(f"{out_dir}: exists and is not a folder")
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for i, line_views in enumerate(views):
        if not line_views:
            raise AttnkitError(f"sentence {i + 1}: the model has no attention to plot")
        for view in line_views:
            for l, heads in enumerate(view.layers, 1):  # heads: (H, Tq, Tk)
                maps = [(f"head{h}", f"head {h}", w) for h, w in enumerate(heads, 1)]
                if len(heads) > 1:
                    maps.append(("mean", "mean over heads", heads.mean(0)))
                for name, label, w in maps:
                    path = out_dir / f"{i:03d}-{view.kind}-layer{l}-{name}.png"
                    title = f"{view.title}, layer {l}, {label}"
                    written.append(plot_attention(w, view.cols, view.rows, path, title, xlabel=view.axes[0], ylabel=view.axes[1]))
    return written
