"""`attnkit plot RUN [RUN ...] --metrics`: the training curves of runs, from their metrics.jsonl (docs/curves.md)."""

from __future__ import annotations

import argparse
from pathlib import Path

from attnkit.errors import AttnkitError

# What `plot` takes for attention pictures and --metrics does not.
ATTENTION_OPTIONS = ("input", "view", "kind", "layer", "head", "beam", "alpha", "target", "image", "words", "truncate", "flow")


def plot_metrics(args: argparse.Namespace) -> int:
    """Draw the curves of `args.run` and the runs after it (`args.text`) into `args.out` (default: RUN/curves.png)."""
    from attnkit.families import run_family
    from attnkit.viz.curve_plot import plot_curves
    from attnkit.viz.curves import run_curves

    for name in ATTENTION_OPTIONS:
        if getattr(args, name) not in (None, False):
            raise AttnkitError(f"--metrics draws training curves; --{name} is for attention plots")
    runs = [args.run, *args.text]
    curves = [run_curves(run, run_family(run).run_schema.METRICS) for run in runs]
    path = plot_curves(curves, args.out or Path(args.run) / "curves.png")
    print(f"wrote {path}")
    return 0
