"""The explorer's views as files (`attnkit plot SOURCE TEXT --view ...`): PNG or SVG by suffix.

The same pictures as the page's canvases (`templates/attention-views.js`): the heatmap of one
layer's head (or head mean), the head view (queries left, keys right, a line from each query to
its `top_k` keys in each head's colour, opacity by weight over the head's largest weight) and the
model view (every layer x head as a small map, each on its own colour scale). The hops view is the
picture of Lin et al. (2017, Fig. 2) of a classifier's attention hops: the input's words written
once per query row (per hop), each shaded by its weight over the row's largest, under a line of the
rows' mean; the page's token strips show the same rows on hover. It is the one drawing of that
picture in a file: `attnkit explain --out X.png` draws one panel a sentence with it.
"""

from __future__ import annotations

import colorsys
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

import numpy as np

from attnkit.errors import AttnkitError
from attnkit.viz.heatmap import plot_attention, pyplot, save_figure

VIEWS = ("heatmap", "head", "model", "hops")


def head_colour(h: int, heads: int) -> tuple[float, float, float]:
    """The colour of head `h` of `heads`, as the page draws it (hsl(360 h / H, 75%, 42%))."""
    return colorsys.hls_to_rgb(h / max(heads, 1), 0.42, 0.75)


def top_k(weights: np.ndarray, k: int) -> np.ndarray:
    """Per query, the indices of its k largest weights: (Tq, Tk) -> (Tq, min(k, Tk))."""
    k = min(k, weights.shape[1])
    return np.argsort(-weights, axis=1, kind="stable")[:, :k]


def plot_head_view(layer: np.ndarray, rows: list[str], cols: list[str], heads: list[int], path: str | Path, title: str = "", k: int = 5) -> Path:
    """Write the head view of one layer (H, Tq, Tk) for `heads`."""
    from matplotlib.collections import LineCollection

    plt = pyplot()
    n = max(len(rows), len(cols))
    fig, ax = plt.subplots(figsize=(6.0, max(3.0, min(0.22 * n + 1.0, 60.0))))
    for h in heads:
        w = layer[h]  # (Tq, Tk)
        best, vmax = top_k(w, k), float(w.max()) or 1.0
        segments = [((0.0, i), (1.0, j)) for i in range(len(rows)) for j in best[i]]
        alphas = [float(w[i, j]) / vmax for i in range(len(rows)) for j in best[i]]
        colours = [(*head_colour(h, layer.shape[0]), a) for a in alphas]
        ax.add_collection(LineCollection(segments, colors=colours, linewidths=1.0))
    if n <= 120:
        for i, t in enumerate(rows):
            ax.text(-0.02, i, t, ha="right", va="center", fontsize=7, family="monospace")
        for j, t in enumerate(cols):
            ax.text(1.02, j, t, ha="left", va="center", fontsize=7, family="monospace")
    ax.set_xlim(-0.4, 1.4)
    ax.set_ylim(n - 0.5, -0.5)
    ax.axis("off")
    ax.set_title(title or "head view", fontsize=9)
    fig.tight_layout()
    return save_figure(fig, path)


def plot_model_view(layers: np.ndarray, path: str | Path, title: str = "") -> Path:
    """Write the model view of (L, H, Tq, Tk): a grid of small maps, rows layers, columns heads."""
    plt = pyplot()
    L, H = layers.shape[:2]
    fig, axes = plt.subplots(L, H, figsize=(1.1 * H + 0.8, 1.1 * L + 0.6), squeeze=False)
    for l in range(L):
        for h in range(H):
            ax = axes[l, h]
            ax.imshow(layers[l, h], cmap="Blues", vmin=0.0, vmax=float(layers[l, h].max()) or 1.0, aspect="auto", interpolation="nearest")
            ax.set_xticks([])
            ax.set_yticks([])
            if l == 0:
                ax.set_title(f"head {h + 1}", fontsize=7)
            if h == 0:
                ax.set_ylabel(f"layer {l + 1}", fontsize=7)
    if title:
        fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    return save_figure(fig, path)


class HopsMap(NamedTuple):
    """One panel of the hops view: a map (Tq, Tk), its query rows, its key tokens and its title."""

    weights: np.ndarray  # (Tq, Tk)
    rows: list[str]
    cols: list[str]
    title: str = ""


def _hops_panel(ax, m: HopsMap) -> None:
    """Draw one map on `ax`: the key tokens, one line for the rows' mean, then one per query row."""
    lines = np.concatenate([m.weights.mean(0, keepdims=True), m.weights])  # (1 + Tq, Tk)
    shade = lines / lines.max(axis=1, keepdims=True).clip(min=1e-12)  # (1 + Tq, Tk): each line on its own scale
    ax.imshow(shade, cmap="Reds", vmin=0.0, vmax=1.0, aspect="auto", interpolation="nearest")
    for i, line in enumerate(shade):
        for j, token in enumerate(m.cols):
            ax.text(j, i, token, ha="center", va="center", fontsize=8, color="white" if line[j] > 0.55 else "black")
    ax.set_xticks([])
    ax.set_yticks(range(len(lines)), ["mean", *m.rows], fontsize=8)
    ax.axhline(0.5, color="black", linewidth=0.8)
    ax.set_title(m.title or "hops view", fontsize=9, loc="left")


def plot_hops_view(maps: Sequence[HopsMap], path: str | Path) -> Path:
    """Write the hops view of each map, one panel under another (`attnkit plot --view hops`: one; `attnkit
    explain --out X.png`: one a sentence)."""
    plt = pyplot()
    heights = [1 + len(m.rows) for m in maps]
    cell = max(0.4, 0.085 * max(len(t) for m in maps for t in m.cols) + 0.15)
    width = min(cell * max(len(m.cols) for m in maps) + 1.5, 200.0)
    fig, axes = plt.subplots(len(maps), 1, figsize=(width, 0.3 * sum(heights) + 0.7 * len(maps) + 0.3), squeeze=False,
                             gridspec_kw={"height_ratios": heights})  # fmt: skip
    for ax, m in zip(axes[:, 0], maps):
        _hops_panel(ax, m)
    fig.tight_layout()
    return save_figure(fig, path)


def plot_view(view: str, layers: np.ndarray, rows: list[str], cols: list[str], path: str | Path,
              layer: int | None = None, head: int | None = None, title: str = "", k: int = 5) -> Path:  # fmt: skip
    """One view of one kind's maps (L, H, Tq, Tk); `layer` and `head` count from 1 (None: the last layer, every head)."""
    if view not in VIEWS:
        raise AttnkitError(f"--view {view}: choose one of {', '.join(VIEWS)}")
    if Path(path).suffix not in (".png", ".svg"):
        raise AttnkitError(f"{path}: the output must be a .png or .svg file")
    L, H = layers.shape[:2]
    l = L if layer is None else layer
    if not 1 <= l <= L or (head is not None and not 1 <= head <= H):
        raise AttnkitError(f"--layer {l} --head {head}: this map has layers 1-{L} and heads 1-{H}")
    if view == "model":
        return plot_model_view(layers, path, title)
    if view == "head":
        heads = list(range(H)) if head is None else [head - 1]
        return plot_head_view(layers[l - 1], rows, cols, heads, path, f"{title}, layer {l}", k)
    weights = layers[l - 1].mean(0) if head is None else layers[l - 1, head - 1]  # (Tq, Tk)
    which = "mean over heads" if head is None else f"head {head}"
    if view == "hops":
        return plot_hops_view([HopsMap(weights, rows, cols, f"{title}, layer {l}, {which}" if H > 1 else title)], path)
    return plot_attention(weights, cols, rows, path, f"{title}, layer {l}, {which}", xlabel="keys", ylabel="queries")
