"""`attnkit plot`: PNG heatmaps of every attention map of a model's output (via `viz.heatmap`).

A family's `views` gives, per input line, its `AttentionView`s (`viz.attention_view`): one per kind of attention (for a
translation: `encoder`, `decoder_self`, `cross`), each with its layers of heads. Per line `i`, kind
and layer `l` (1-based): one file per head, `{i:03d}-{kind}-layer{l}-head{h}.png`, and the head
average, `{i:03d}-{kind}-layer{l}-mean.png` (written only when the layer has more than one head).
"""

from __future__ import annotations

from pathlib import Path

from attnkit.errors import AttnkitError
from attnkit.viz.attention_view import AttentionView
from attnkit.viz.heatmap import plot_attention


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
