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


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("run")
    p.add_argument("--out", help="path prefix for .png and .json (default: benchmarks/results/<run name>_bleu_curve)")
    args = p.parse_args()
    run = Path(args.run)
    records = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    valid = [r for r in records if r["kind"] == "valid" and "bleu" in r]
    points = [{"step": r["step"], "minutes": round(r["elapsed"] / 60, 2), "bleu": round(r["bleu"], 2), "loss": round(r["loss"], 3)} for r in valid]
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
