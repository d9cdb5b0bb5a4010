"""The deletion curves of `attnkit faithfulness`: p(y) as each method's top-ranked tokens are removed.

One line per method over the share of the tokens removed (0..100%). Attention layers are drawn
thin and grey-blue (there may be many), the other methods in their own colours; the random ranking,
the floor, dashed black. A curve that falls faster (lower area) ranks the tokens the output needs first.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from attnkit.viz.heatmap import pyplot, save_png


def plot_deletion_curves(points: Sequence[float], curves: dict[str, Sequence[float]], path: str | Path, title: str = "") -> Path:
    """Write one PNG of `curves` (method -> mean p(y) at each share of `points` removed); returns the path."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    x = [100 * d for d in points]
    layers = [n for n in curves if "/layer" in n]
    for i, name in enumerate(layers):
        shade = 0.35 + 0.5 * i / max(len(layers) - 1, 1)
        ax.plot(x, curves[name], color=(0.3, 0.45, shade), linewidth=0.9, alpha=0.8, label=name)
    for name in (n for n in curves if "/layer" not in n):
        style = {"color": "black", "linestyle": "--"} if name == "random" else {"linewidth": 1.8}
        ax.plot(x, curves[name], label=name, **style)
    ax.set_xlabel("tokens removed, top-ranked first (%)")
    ax.set_ylabel("p(y), mean over outputs")
    ax.set_xlim(0, 100)
    ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, ncol=2 if len(curves) > 8 else 1)
    if title:
        ax.set_title(title, fontsize=10)
    fig.tight_layout()
    return save_png(fig, path)
