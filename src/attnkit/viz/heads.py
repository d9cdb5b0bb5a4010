"""The layers x heads grid of head statistics (`attnkit heads`): one panel per statistic.

Each panel is an L x H image (rows: layers from the input up, columns: heads), every cell labelled
with its value, as in the per-head figures of Clark et al. (2019). Shares of attention share one
0..1 colour scale; entropy and distance use their own range.
"""

from __future__ import annotations

import math
from pathlib import Path

from torch import Tensor

from attnkit.viz.heatmap import pyplot, save_png

SHARES = ("first", "separator", "punctuation", "previous", "next")  # drawn on one 0..1 scale; the others on their own range


def plot_head_grid(means: dict[str, Tensor], path: str | Path, title: str = "") -> Path:
    """Write one PNG with a (L, H) panel per statistic in `means`; returns the path."""
    plt = pyplot()
    names = list(means)
    L, H = next(iter(means.values())).shape
    cols = min(4, len(names))
    rows = math.ceil(len(names) / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(cols * (1.2 + 0.55 * H), rows * (1.0 + 0.45 * L)), squeeze=False)
    for ax, name in zip(axes.flat, names):
        values = means[name].float().numpy()  # (L, H)
        lo, hi = (0.0, 1.0) if name in SHARES else (float(values.min()), float(values.max()))
        image = ax.imshow(values, cmap="viridis", aspect="auto", vmin=lo, vmax=max(hi, lo + 1e-9))
        ax.set_title(name)
        ax.set_xticks(range(H), [str(h + 1) for h in range(H)])
        ax.set_yticks(range(L), [str(l + 1) for l in range(L)])
        ax.set_xlabel("head")
        ax.set_ylabel("layer")
        for l in range(L):
            for h in range(H):
                bright = (values[l, h] - lo) / max(hi - lo, 1e-9) > 0.6  # viridis turns yellow at the top
                ax.text(h, l, f"{values[l, h]:.2f}", ha="center", va="center", fontsize=7, color="black" if bright else "white")
        fig.colorbar(image, ax=ax, fraction=0.046)
    for ax in list(axes.flat)[len(names) :]:
        ax.axis("off")
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    return save_png(fig, path)
