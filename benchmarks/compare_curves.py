"""Validation BLEU against updates for two recipes (e.g. bf16 against fp32), one or more seeds each:
a JSON line and a PNG.

    .venv/bin/python benchmarks/compare_curves.py --a RUN [RUN ...] --b RUN [RUN ...] \\
        --out benchmarks/results/NAME [--labels bf16 fp32]

Each RUN is a run folder (its metrics.jsonl) or `FILE.json:LABEL`, the LABEL curve of an earlier
result of this script (for runs whose folders are gone). All runs must validate at the same updates
(the same `train.eval_every`). At every update that all runs reached, the JSON line lists each
recipe's mean BLEU and loss over its runs, the difference of the means, and, when both recipes
have several runs, the largest BLEU difference between two runs of the same recipe (seed noise).
"""

from __future__ import annotations

import argparse
import itertools
import json
import statistics
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from attnkit.viz.curves import METRICS_FILE, read_records, valid_points  # noqa: E402


def curve(source: str) -> dict[int, dict]:
    """{step: {"bleu", "loss"}} of a run folder or of one label of an earlier compare_curves JSON."""
    path, _, label = source.partition(".json:")
    if label:
        record = json.loads(Path(path + ".json").read_text())
        return {p["step"]: {"bleu": p[label], "loss": p[f"loss_{label}"]} for p in record["points"]}
    return {q["step"]: {"bleu": q["bleu"], "loss": q["loss"]} for q in valid_points(read_records(Path(source) / METRICS_FILE), ("bleu", "loss"))}


def seed_noise(curves: list[dict[int, dict]], step: int) -> float:
    """The largest BLEU difference between two runs of one recipe at `step`."""
    return max(abs(x[step]["bleu"] - y[step]["bleu"]) for x, y in itertools.combinations(curves, 2))


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--a", nargs="+", required=True, help="runs of the first recipe")
    p.add_argument("--b", nargs="+", required=True, help="runs of the second recipe")
    p.add_argument("--labels", nargs=2, default=["a", "b"], help="names for the two recipes")
    p.add_argument("--out", required=True, help="path prefix for .png and .json")
    args = p.parse_args()
    labels = args.labels
    groups = [[curve(s) for s in args.a], [curve(s) for s in args.b]]
    steps = sorted(set.intersection(*(set(c) for c in groups[0] + groups[1])))
    if not steps:
        raise SystemExit("compare_curves: the runs share no validation step")
    mean = [{s: {k: statistics.fmean(c[s][k] for c in g) for k in ("bleu", "loss")} for s in steps} for g in groups]
    points = []
    for s in steps:
        point = {"step": s, labels[0]: round(mean[0][s]["bleu"], 2), labels[1]: round(mean[1][s]["bleu"], 2),
                 "diff": round(mean[0][s]["bleu"] - mean[1][s]["bleu"], 2),
                 f"loss_{labels[0]}": round(mean[0][s]["loss"], 3), f"loss_{labels[1]}": round(mean[1][s]["loss"], 3)}  # fmt: skip
        if all(len(g) > 1 for g in groups):
            point["seed_noise"] = {label: round(seed_noise(g, s), 2) for label, g in zip(labels, groups)}
        points.append(point)
    out = Path(args.out)
    record = {"benchmark": "compare_curves", "runs": {labels[0]: args.a, labels[1]: args.b}, "labels": labels,
              "points": points, "max_abs_diff": max(abs(pt["diff"]) for pt in points)}  # fmt: skip
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".json").write_text(json.dumps(record) + "\n")
    print(json.dumps(record))
    fig, ax = plt.subplots(figsize=(6.5, 4))
    for label, g, m, color in zip(labels, groups, mean, ("C0", "C1")):
        for c in g if len(g) > 1 else []:
            ax.plot(steps, [c[s]["bleu"] for s in steps], color=color, alpha=0.3, linewidth=1)
        ax.plot(steps, [m[s]["bleu"] for s in steps], color=color, marker="o", label=f"{label} (mean of {len(g)})")
    ax.set_xlabel("updates")
    ax.set_ylabel("validation BLEU (greedy)")
    ax.legend()
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(out.with_suffix(".png"), dpi=120)


if __name__ == "__main__":
    main()
