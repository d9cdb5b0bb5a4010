"""Attention heatmaps as PNG files (matplotlib, no display needed).

matplotlib is imported when the first heatmap is drawn: it takes about a second, which every
command that never plots (train, translate, serve) would otherwise pay at start-up.
"""

from __future__ import annotations

from pathlib import Path

from attnkit.io import atomic_path


def pyplot():
    """matplotlib's pyplot on the Agg backend (files only, no display)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def save_png(fig, path: str | Path, dpi: int = 120) -> Path:
    """Write a matplotlib figure as PNG atomically (never a half-written file), close it; returns the path."""
    return save_figure(fig, path, dpi, "png")


def save_figure(fig, path: str | Path, dpi: int = 120, format: str | None = None) -> Path:
    """Write a figure atomically as PNG or SVG (`format`, or the suffix of `path`), close it; returns the path."""
    path = Path(path)
    with atomic_path(path) as tmp:
        fig.savefig(tmp, format=format or ("svg" if path.suffix == ".svg" else "png"), dpi=dpi)
    pyplot().close(fig)
    return path


def plot_attention(weights, src: list[str], tgt: list[str], path: str | Path, title: str = "",
                   xlabel: str = "source", ylabel: str = "target") -> Path:  # fmt: skip
    """Write a (T x S) heatmap with target tokens (queries) as rows and source tokens (keys) as columns."""
    plt = pyplot()
    rows = weights.tolist() if hasattr(weights, "tolist") else weights
    width = max(4.0, 0.32 * len(src) + 2.0)
    height = max(3.0, 0.32 * len(tgt) + 1.5)
    fig, ax = plt.subplots(figsize=(width, height))
    image = ax.imshow(rows, cmap="viridis", vmin=0.0, vmax=1.0, aspect="auto")
    ax.set_xticks(range(len(src)), src, rotation=90, fontsize=8)
    ax.set_yticks(range(len(tgt)), tgt, fontsize=8)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if title:
        ax.set_title(title, fontsize=9)
    fig.colorbar(image, ax=ax, fraction=0.046, pad=0.04)
    fig.tight_layout()
    return save_figure(fig, path)
