"""The figure of Show, Attend and Tell (Xu et al. 2015, Fig. 2-3): for each generated word, the
image with that step's attention alpha_t upsampled to the image and overlaid (`overlay`), as one PNG
strip (`attention_strip`) or as data URIs for the HTML report (`data_uri`)."""

from __future__ import annotations

import base64
import io
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from PIL import Image

from attnkit.viz.heatmap import pyplot, save_png


def upsample(weights: Sequence[float], grid: int, size: int) -> np.ndarray:
    """One step's weights over grid x grid cells as a size x size map (bilinear), scaled to max 1."""
    cells = np.asarray(weights, dtype=np.float32).reshape(grid, grid)
    top = float(cells.max()) or 1.0
    picture = Image.fromarray(cells / top, mode="F").resize((size, size), Image.Resampling.BILINEAR)
    return np.asarray(picture)


def overlay(image: Image.Image, weights: Sequence[float], grid: int, opacity: float = 0.65) -> Image.Image:
    """The RGB image with one step's attention map over it: bright where the word looked.

    Each pixel is ``(1 - opacity) * pixel + opacity * 255 * map``, the map upsampled bilinearly to
    the image and scaled to max 1 (a gray heatmap at `opacity` over the photo).
    """
    pixels = np.asarray(image.convert("RGB"), dtype=np.float32)  # (H, W, 3)
    heat = upsample(weights, grid, image.size[0])[..., None] * 255.0  # (H, W, 1)
    return Image.fromarray(np.clip((1.0 - opacity) * pixels + opacity * heat, 0, 255).round().astype(np.uint8), mode="RGB")


def data_uri(image: Image.Image, quality: int = 85) -> str:
    """An RGB image as a ``data:image/jpeg;base64,...`` URI (embedded in the offline report)."""
    out = io.BytesIO()
    image.convert("RGB").save(out, format="JPEG", quality=quality)
    return "data:image/jpeg;base64," + base64.b64encode(out.getvalue()).decode("ascii")


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
        if k == 0:
            ax.imshow(pixels)
            ax.set_title("input", fontsize=9)
            continue
        ax.imshow(np.asarray(overlay(image, attention[k - 1], grid)))
        ax.set_title(words[k - 1], fontsize=10)
    if title:
        fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    return save_png(fig, path, dpi=80)
