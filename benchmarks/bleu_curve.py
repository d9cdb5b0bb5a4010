"""Validation BLEU against wall-clock minutes from a run's metrics.jsonl: a JSON line and a PNG.

.venv/bin/python benchmarks/bleu_curve.py RUN_DIR [--out benchmarks/results/NAME]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from attnkit.viz.curves import METRICS_FILE, read_records, valid_points  # noqa: E402


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("run")
    p.add_argument("--out", help="path prefix for .png and .json (default: benchmarks/results/<run name>_bleu_curve)")
    args = p.parse_args()
    run = Path(args.run)
    valid = valid_points(read_records(run / METRICS_FILE), ("bleu", "loss"))
    points = [{"step": q["step"], "minutes": round(q["minutes"], 2), "bleu": round(q["bleu"], 2), "loss": round(q["loss"], 3)} for q in valid]
    out = Path(args.out or f"benchmarks/results/{run.name}_bleu_curve")
    out.parent.mkdir(parents=True, exist_ok=True)
    fig, ax = plt.subplots(figsize=(6, 4))
    ax.plot([q["minutes"] for q in points], [q["bleu"] for q in points], marker="o")
    ax.set_xlabel("wall-clock minutes (training + validation, 2 CPU cores)")
    ax.set_ylabel("validation BLEU (greedy)")
    ax.set_title(f"{run.name}: Multi30k En->De val BLEU against time")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(out.with_suffix(".png"), dpi=110)
    result = {"benchmark": "bleu_curve", "run": str(run), "points": points}
    out.with_suffix(".json").write_text(json.dumps(result) + "\n")
    print(json.dumps(result))


if __name__ == "__main__":
    main()
