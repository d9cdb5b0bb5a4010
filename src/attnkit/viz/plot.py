"""`attnkit plot`: PNG heatmaps of every attention map of a translation (via `viz.heatmap`).

Per sentence `i`, per kind (`encoder`, `decoder_self`, `cross`) and layer `l` (1-based): one file per
head, `{i:03d}-{kind}-layer{l}-head{h}.png`, and the head average, `{i:03d}-{kind}-layer{l}-mean.png`
(written only when the layer has more than one head). An RNN decoder has one cross-attention map.
"""

from __future__ import annotations

from pathlib import Path

from attnkit.errors import AttnkitError
from attnkit.viz.explore import TITLES, Explored
from attnkit.viz.heatmap import plot_attention

AXES = {"encoder": ("source (keys)", "source (queries)"), "decoder_self": ("decoder input", "output"), "cross": ("source", "output")}


def plot_maps(explored: list[Explored], out_dir: str | Path) -> list[Path]:
    """Write the heatmaps of each explanation into `out_dir`; returns the files written."""
    out_dir = Path(out_dir)
    if out_dir.exists() and not out_dir.is_dir():
        raise AttnkitError(f"{out_dir}: exists and is not a folder")
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for e in explored:
        if not e.views:
            raise AttnkitError(f"sentence {e.index + 1}: the model has no attention to plot")
        for view in e.views:
            xlabel, ylabel = AXES[view.kind]
            for l, heads in enumerate(view.layers, 1):  # heads: (H, Tq, Tk)
                maps = [(f"head{h}", f"head {h}", w) for h, w in enumerate(heads, 1)]
                if len(heads) > 1:
                    maps.append(("mean", "mean over heads", heads.mean(0)))
                for name, label, w in maps:
                    title = f"{TITLES[view.kind]}, layer {l}, {label}"
                    path = out_dir / f"{e.index:03d}-{view.kind}-layer{l}-{name}.png"
                    written.append(plot_attention(w, view.cols, view.rows, path, title, xlabel=xlabel, ylabel=ylabel))
    return written
