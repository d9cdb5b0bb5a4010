"""How much each parser gains from more trees: dev and test F1 (EVALB COLLINS.prm, all lengths) of
parsers trained on the first 25%, 50% and 100% of the sample's training trees with the same budget
in updates, one JSON line, a PNG, and what a power law fitted to the points predicts for the full
WSJ's 39,832 training trees.

.venv/bin/python benchmarks/parse_data_efficiency.py --presets parse-ptb parse-ptb-chart --steps 1000

Runs train `--parallel` at a time with `--threads` threads each (the budget is in updates, so runs
may share the machine); a run folder that already holds a finished run is scored, not retrained.
The fit: log(100 - F1) = a + b log(trees) by least squares (the error of a learning curve falling as a
power of the data; Hestness et al. 2017), a rough guide from three points, not a measurement.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import matplotlib
import numpy as np

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from attnkit.families import load_config  # noqa: E402
from attnkit.families.parsing.task import read_splits  # noqa: E402
from attnkit.viz.curves import METRICS_FILE, read_records  # noqa: E402

ATTNKIT = str(Path(sys.executable).with_name("attnkit"))
FULL_WSJ = 39_832  # training trees of WSJ sections 02-21


def train_command(preset: str, fraction: float, run: Path, args: argparse.Namespace) -> list[str]:
    sets = {"data.train_fraction": fraction, "train.max_steps": args.steps, "train.max_minutes": 600, "train.threads": args.threads}
    return [ATTNKIT, "train", preset, "--out", str(run), *[x for k, v in sets.items() for x in ("--set", f"{k}={v}")]]


def train_all(jobs: list[tuple[str, float, Path]], args: argparse.Namespace) -> None:
    """Train every job not yet finished, `args.parallel` at a time."""
    todo = [job for job in jobs if not (job[2] / "best.json").is_file()]
    env = {**os.environ, "OMP_NUM_THREADS": str(args.threads)}
    running: list[tuple[subprocess.Popen, Path]] = []
    while todo or running:
        while todo and len(running) < args.parallel:
            preset, fraction, run = todo.pop(0)
            run.parent.mkdir(parents=True, exist_ok=True)
            log = open(run.with_suffix(".log"), "w")  # noqa: SIM115 (closed with the process)
            print(f"training {run.name}: {' '.join(train_command(preset, fraction, run, args))}", file=sys.stderr)
            running.append((subprocess.Popen(train_command(preset, fraction, run, args), stdout=log, stderr=subprocess.STDOUT, env=env), run))
        process, run = running.pop(0)
        if process.wait() != 0:
            raise SystemExit(f"training {run} failed: see {run.with_suffix('.log')}")


def score(run: Path, trees: str, split: str) -> dict:
    out = subprocess.run([ATTNKIT, "evaluate", str(run), "--trees", trees, "--split", split], capture_output=True, text=True, check=True).stdout
    report = json.loads(out)
    return {"f1": round(report["all"]["fmeasure"], 2), "len<=40": round(report["len<=40"]["fmeasure"], 2)}


def updates(run: Path) -> int:
    return max(r["step"] for r in read_records(run / METRICS_FILE))


def power_law(trees: list[int], f1: list[float], at: int) -> float:
    """F1 at `at` trees from log(100 - F1) = a + b log(trees) fitted to the points."""
    b, a = np.polyfit(np.log(trees), np.log(100.0 - np.asarray(f1)), 1)
    return round(100.0 - math.exp(a + b * math.log(at)), 2)


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--presets", nargs="+", default=["parse-ptb", "parse-ptb-chart"])
    p.add_argument("--fractions", nargs="+", type=float, default=[0.25, 0.5, 1.0])
    p.add_argument("--steps", type=int, default=1000, help="updates for every run (the same budget)")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--parallel", type=int, default=2, help="runs trained at once")
    p.add_argument("--runs", default="runs/data-efficiency", help="folder of the run folders")
    p.add_argument("--trees", default="../shared/data/ptb_sample/treebank.zip")
    p.add_argument("--out", default="benchmarks/results/parse_data_efficiency")
    args = p.parse_args()
    jobs = [(preset, f, Path(args.runs) / f"{preset}-{round(f * 100)}") for preset in args.presets for f in args.fractions]
    train_all(jobs, args)
    results: dict[str, list[dict]] = {}
    for preset, fraction, run in jobs:
        config = load_config(run / "config.yaml")
        n = sum(len(t.words()) <= config.data.max_len for t in read_splits(config, Path(args.trees))["train"])
        point = {"fraction": fraction, "trees": n, "updates": updates(run), "dev": score(run, args.trees, "dev"), "test": score(run, args.trees, "test")}
        results.setdefault(preset, []).append(point)
        print(json.dumps({preset: point}), file=sys.stderr)
    predicted = {preset: {split: power_law([q["trees"] for q in points], [q[split]["f1"] for q in points], FULL_WSJ) for split in ("dev", "test")}
                 for preset, points in results.items() if len(points) >= 2}  # fmt: skip
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig, ax = plt.subplots(figsize=(6.5, 4.2))
    for preset, points in results.items():
        x = [q["trees"] for q in points]
        (line,) = ax.plot(x, [q["dev"]["f1"] for q in points], marker="o", label=f"{preset} dev")
        ax.plot(x, [q["test"]["f1"] for q in points], marker="s", linestyle="--", color=line.get_color(), label=f"{preset} test")
    ax.set_xscale("log")
    ax.set_xlabel(f"training trees (log scale); {args.steps} updates each")
    ax.set_ylabel("labelled F1 (EVALB COLLINS.prm, all lengths)")
    ax.grid(alpha=0.3, which="both")
    ax.legend()
    fig.tight_layout()
    fig.savefig(out.with_suffix(".png"), dpi=120)
    line = json.dumps({"benchmark": "parse_data_efficiency", "steps": args.steps, "threads": args.threads, "parallel": args.parallel,
                       "results": results, "power_law_at_full_wsj": predicted})  # fmt: skip
    out.with_suffix(".json").write_text(line + "\n")
    print(line)


if __name__ == "__main__":
    main()
