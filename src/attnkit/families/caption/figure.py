"""The figure of Show, Attend and Tell (Xu et al. 2015, Fig. 2-3): for each generated word, the
image with that step's attention alpha_t upsampled to the image and overlaid, as one PNG strip."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
from PIL import Image

from attnkit.io import atomic_path
from attnkit.viz.heatmap import pyplot


def upsample(weights: Sequence[float], grid: int, size: int) -> np.ndarray:
    """One step's weights over grid x grid cells as a size x size map (bilinear), scaled to max 1."""
    cells = np.asarray(weights, dtype=np.float32).reshape(grid, grid)
    top = float(cells.max()) or 1.0
    picture = Image.fromarray(cells / top, mode="F").resize((size, size), Image.Resampling.BILINEAR)
    return np.asarray(picture)


def attention_strip(path: str | Path, image: Image.Image, words: Sequence[str], attention: Sequence[Sequence[float]], grid: int,
                    title: str = "", per_row: int = 8) -> Path:  # fmt: skip
    """Write the image, then one panel per word with its attention map overlaid, to a PNG (atomically).

    Args:
        path: the PNG file.
        image: the RGB image as the encoder saw it (size x size).
        words: the generated words (``</s>`` included when the caption finished).
        attention: one row of P = grid^2 weights per word.
        grid: cells per side.
        title: written above the strip.
        per_row: panels per row (the original image counts as one).
    """
    plt = pyplot()
    panels = len(words) + 1
    rows, cols = -(-panels // per_row), min(panels, per_row)
    fig, axes = plt.subplots(rows, cols, figsize=(2.0 * cols, 2.5 * rows), squeeze=False)
    pixels = np.asarray(image)
    for k, ax in enumerate(axes.flat):
        ax.axis("off")
        if k >= panels:
            continue
        ax.imshow(pixels)
        if k == 0:
            ax.set_title("input", fontsize=9)
            continue
        ax.imshow(upsample(attention[k - 1], grid, image.size[0]), cmap="gray", alpha=0.65, vmin=0.0, vmax=1.0)
        ax.set_title(words[k - 1], fontsize=10)
    if title:
        fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    path = Path(path)
    with atomic_path(path) as tmp:
        fig.savefig(tmp, format="png", dpi=80)
    plt.close(fig)
    return path
