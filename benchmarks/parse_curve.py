"""Dev F1 (EVALB, greedy constrained parses) against wall-clock minutes from parsing runs'
metrics.jsonl: one JSON line and a PNG, several runs overlaid (the ablations).

.venv/bin/python benchmarks/parse_curve.py RUN_DIR [RUN_DIR ...] [--out benchmarks/results/NAME] [--by steps]

`--by steps` plots against updates: the fair axis for runs that shared the machine.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from attnkit.viz.curves import METRICS_FILE, read_records, valid_points  # noqa: E402


def curve(run: Path) -> list[dict]:
    points = valid_points(read_records(run / METRICS_FILE), ("f1", "loss"))
    return [{"step": q["step"], "minutes": round(q["minutes"], 2), "f1": round(q["f1"], 2), "loss": round(q["loss"], 3)} for q in points]


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("runs", nargs="+")
    p.add_argument("--out", help="path prefix for .png and .json (default: benchmarks/results/<first run>_f1_curve)")
    p.add_argument("--by", choices=["minutes", "steps"], default="minutes", help="the x axis: training minutes or updates")
    args = p.parse_args()
    runs = [Path(r) for r in args.runs]
    curves = {run.name: curve(run) for run in runs}
    out = Path(args.out or f"benchmarks/results/{runs[0].name}_f1_curve")
    out.parent.mkdir(parents=True, exist_ok=True)
    fig, ax = plt.subplots(figsize=(6, 4))
    for name, points in curves.items():
        ax.plot([q[{"minutes": "minutes", "steps": "step"}[args.by]] for q in points], [q["f1"] for q in points], marker="o", label=name)
    ax.set_xlabel("training minutes (1 thread)" if args.by == "minutes" else "updates")
    ax.set_ylabel("dev labelled F1 (EVALB, greedy)")
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(out.with_suffix(".png"), dpi=120)
    best = {name: max(points, key=lambda q: q["f1"]) if points else None for name, points in curves.items()}
    line = json.dumps({"benchmark": "parse_curve", "best": best, "curves": curves})
    out.with_suffix(".json").write_text(line + "\n")
    print(line)


if __name__ == "__main__":
    main()
