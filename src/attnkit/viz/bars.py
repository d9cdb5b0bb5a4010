"""Horizontal bar charts, one panel per measure, sharing the row labels (a sweep's `table.png`)."""

from __future__ import annotations

from pathlib import Path

from attnkit.viz.heatmap import pyplot, save_png


def plot_bars(labels: list[str], panels: dict[str, list[float | None]], path: str | Path, title: str = "") -> Path:
    """Write one panel of bars per entry of `panels` (its values, one per label; None: not measured)."""
    plt = pyplot()
    height = max(2.5, 0.3 * len(labels) + 1.2)
    fig, axes = plt.subplots(1, len(panels), figsize=(3.2 * len(panels) + 1.5, height), sharey=True, squeeze=False)
    rows = list(range(len(labels)))
    for ax, (name, values) in zip(axes[0], panels.items()):
        ax.barh(rows, [0.0 if v is None else v for v in values], color="#4c72b0")
        for y, v in zip(rows, values):
            ax.text(0.0 if v is None else v, y, " —" if v is None else f" {v:,.0f}" if abs(v) >= 1000 else f" {v:.3g}", va="center", fontsize=7)
        ax.set_title(name, fontsize=9)
        ax.tick_params(axis="x", labelsize=7)
    axes[0][0].set_yticks(rows, labels, fontsize=8)
    axes[0][0].invert_yaxis()  # first row on top, as in the table
    if title:
        fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    return save_png(fig, path)
