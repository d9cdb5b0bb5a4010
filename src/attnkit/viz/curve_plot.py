"""`attnkit plot RUN [RUN ...] --metrics`: the training curves of one or more runs in one figure (PNG or SVG).

One row per panel of `viz.curves` (loss, learning rate, each validation metric), the left column
against updates, the right one against minutes of training (validation included). Runs overlay in
one colour each; training values are drawn as lines, validation values as dashed lines with dots.
"""

from __future__ import annotations

from pathlib import Path

from attnkit.errors import AttnkitError
from attnkit.viz.curves import Curves
from attnkit.viz.heatmap import pyplot, save_figure

STYLE = {"train": {"linestyle": "-", "linewidth": 1.2}, "valid": {"linestyle": "--", "marker": "o", "markersize": 3, "linewidth": 1.2}}
AXES = (("step", "updates"), ("minutes", "minutes of training (with validation)"))


def plot_curves(runs: list[Curves], path: str | Path) -> Path:
    """Write the curves of `runs` (overlaid, one colour each) to `path`, a .png or .svg file."""
    if Path(path).suffix not in (".png", ".svg"):
        raise AttnkitError(f"{path}: the output must be a .png or .svg file")
    labels = {}  # panel key -> label, in the order the runs first show them
    for curves in runs:
        labels.update({p.key: p.label for p in curves.panels if p.key not in labels})
    plt = pyplot()
    fig, axes = plt.subplots(len(labels), 2, figsize=(10.0, 2.3 * len(labels) + 0.7), squeeze=False)
    for row, (key, label) in enumerate(labels.items()):
        for col, (x, xlabel) in enumerate(AXES):
            ax = axes[row, col]
            for i, curves in enumerate(runs):
                for panel in (p for p in curves.panels if p.key == key):
                    for line in panel.lines:
                        name = line.label if len(runs) == 1 else f"{curves.name} {line.label}"
                        ax.plot(getattr(line, x), line.value, color=f"C{i % 10}", label=name, **STYLE[line.label])
            ax.set_ylabel(label)
            ax.grid(alpha=0.3)
            if key == "lr":
                ax.ticklabel_format(axis="y", style="sci", scilimits=(-3, 3))
            if row == len(labels) - 1:
                ax.set_xlabel(xlabel)
        axes[row, 0].legend(fontsize=7)
    fig.suptitle(f"training curves: {', '.join(c.name for c in runs)}", fontsize=10)
    fig.tight_layout()
    return save_figure(fig, path)
