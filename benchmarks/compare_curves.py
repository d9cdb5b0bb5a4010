"""Validation BLEU against updates for two runs of one recipe (e.g. bf16 against fp32): a JSON line and a PNG.

    .venv/bin/python benchmarks/compare_curves.py RUN_A RUN_B [--labels bf16 fp32] [--out benchmarks/results/NAME]

Both runs must validate at the same updates (the same `train.eval_every`). The JSON line lists
BLEU (and loss) of both at every update both reached, their differences and the largest one.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def curve(run: Path) -> dict[int, dict]:
    records = (json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines())
    return {r["step"]: r for r in records if r["kind"] == "valid" and "bleu" in r}


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("runs", nargs=2, type=Path)
    p.add_argument("--labels", nargs=2, default=None, help="names for the two runs (default: folder names)")
    p.add_argument("--out", help="path prefix for .png and .json (default: benchmarks/results/<A>_vs_<B>)")
    args = p.parse_args()
    labels = args.labels or [run.name for run in args.runs]
    a, b = (curve(run) for run in args.runs)
    steps = sorted(set(a) & set(b))
    if not steps:
        raise SystemExit("compare_curves: the two runs share no validation step")
    points = [{"step": s, labels[0]: round(a[s]["bleu"], 2), labels[1]: round(b[s]["bleu"], 2),
               "diff": round(a[s]["bleu"] - b[s]["bleu"], 2),
               f"loss_{labels[0]}": round(a[s]["loss"], 3), f"loss_{labels[1]}": round(b[s]["loss"], 3)} for s in steps]  # fmt: skip
    out = Path(args.out or f"benchmarks/results/{args.runs[0].name}_vs_{args.runs[1].name}")
    record = {"benchmark": "compare_curves", "runs": [str(r) for r in args.runs], "labels": labels, "points": points,
              "max_abs_diff": max(abs(pt["diff"]) for pt in points)}  # fmt: skip
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".json").write_text(json.dumps(record) + "\n")
    print(json.dumps(record))
    fig, ax = plt.subplots(figsize=(6.5, 4))
    for label, c in zip(labels, (a, b)):
        ax.plot(steps, [c[s]["bleu"] for s in steps], marker="o", label=label)
    ax.set_xlabel("updates")
    ax.set_ylabel("validation BLEU (greedy)")
    ax.legend()
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(out.with_suffix(".png"), dpi=120)


if __name__ == "__main__":
    main()
