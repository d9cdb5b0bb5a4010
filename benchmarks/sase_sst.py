"""SST-5 dev accuracy of the self-attentive sentence embedding (Lin et al. 2017) against its
baselines, and the penalty ablation (coef 0 vs 1), all from random initialisation with `attnkit train`.

    .venv/bin/python benchmarks/sase_sst.py [--only sase,coef1,bag,last] [--seeds 1 2 3] [--minutes 40] [--threads 1] [--set k=v ... --tag NAME]
    .venv/bin/python benchmarks/sase_sst.py --summary          # mean and spread over seeds, per variant
    .venv/bin/python benchmarks/sase_sst.py --record runs/sase-sst5 --variant sase   # a run trained with `attnkit train`

Each variant is the `sase-sst5` preset with overrides, trained into runs/bench-sase-NAME[-sSEED] (replaced)
with jemalloc, as `attnkit train` runs,
chosen on dev by accuracy (early stopping); the best checkpoint is then scored on the dev trees.
Appends one JSON line per variant to benchmarks/results/sase_sst.jsonl and prints it.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import shutil
import statistics
import sys
import time
from pathlib import Path

import torch

from attnkit.allocator import MARKER, use_jemalloc
from attnkit.artifacts.checkpoint import find_checkpoint
from attnkit.families import load_config, load_run
from attnkit.families.classification.infer import evaluate_labelled
from attnkit.train.loop import train
from attnkit.train.state import TrainState
from attnkit.viz.curves import METRICS_FILE, read_records

ROOT = Path(__file__).resolve().parents[1]
PRESET = ROOT / "src/attnkit/families/classification/presets/sase-sst5.yaml"
RESULTS = ROOT / "benchmarks/results/sase_sst.jsonl"
BUDGET_MINUTES = 15  # dev_accuracy_15min: the best validation accuracy within this much training
VARIANTS = {
    "sase": [],  # the preset: bi-LSTM, r-hop attention
    "coef0": ["model.coef=0"],  # penalty ablation
    "coef1": ["model.coef=1"],
    "bag": ["model.encoder=none", "model.pooling=mean"],  # bag-of-embeddings baseline
    "last": ["model.pooling=last"],  # last-state bi-LSTM baseline
}


def run_variant(name: str, overrides: list[str], minutes: float, threads: int, data: str | None, seed: int) -> dict:
    sets = [*overrides, f"train.max_minutes={minutes}", f"train.threads={threads}", f"train.seed={seed}"]
    out = ROOT / "runs" / (f"bench-sase-{name}" if seed == 1 else f"bench-sase-{name}-s{seed}")
    shutil.rmtree(out, ignore_errors=True)
    started = time.perf_counter()
    train(load_config(PRESET, sets), out, data_dir=data)
    return {**record(out, name, data), "overrides": sets, "wall_minutes": round((time.perf_counter() - started) / 60, 1)}


def record(out: Path, name: str, data: str | None) -> dict:
    """The figures of a trained run folder: its best checkpoint scored on the SST dev trees."""
    state = TrainState.from_dict(json.loads((find_checkpoint(out, "last") / "state.json").read_text())["train_state"])
    records = read_records(out / METRICS_FILE)
    best_step = int(state.best_checkpoint.removeprefix("step_"))
    best = next(r for r in records if r["kind"] == "valid" and r["step"] == best_step)
    within = [r["accuracy"] for r in records if r["kind"] == "valid" and r["elapsed"] <= BUDGET_MINUTES * 60]
    loaded = load_run(out, "best", task="classification")
    dev = Path(data or ROOT.parent / "shared/data/sst") / "trees_dev.txt.gz"
    report = evaluate_labelled(loaded, dev)
    m = loaded.run.model
    return {
        "benchmark": "sase_sst5", "variant": name, "run": str(out),
        "model": {k: getattr(m, k) for k in ("embed_dim", "u", "d_a", "r", "mlp_hidden", "coef", "dropout", "word_dropout", "encoder", "pooling")},
        "lr": loaded.run.train.schedule.lr, "phrases": loaded.run.data.phrases,
        "dev_accuracy": round(report["accuracy"], 4), "dev_macro_f1": round(report["macro_f1"], 4),
        "dev_accuracy_15min": round(max(within), 4) if within else None,
        "hop_overlap": round(best["overlap"], 4) if "overlap" in best else None,
        "penalty": round(best["penalty"], 3) if "penalty" in best else None,
        "best_step": best_step, "minutes_to_best": round(best["elapsed"] / 60, 1),
        "train_minutes": round(state.elapsed / 60, 1), "steps": state.step,
        "examples_seen": state.target_tokens,
        "params_m": round(sum(p.numel() for p in loaded.model.parameters()) / 1e6, 2),
        "seed": loaded.run.train.seed, "threads": loaded.run.train.threads, "allocator": os.environ.get(MARKER, "system"), "torch": torch.__version__, "date": datetime.date.today().isoformat(),
    }  # fmt: skip


def summary() -> None:
    """Markdown table: per variant, dev accuracy over its seeds (the last record of each seed counts)."""
    latest: dict[str, dict[int, dict]] = {}
    for line in RESULTS.read_text(encoding="utf-8").splitlines():
        r = json.loads(line)
        latest.setdefault(r["variant"], {})[r.get("seed", 1)] = r
    print(
        f"| variant | seeds | dev accuracy, mean | min - max | macro-F1, mean | minutes to best / to stop, mean | best within {BUDGET_MINUTES} min, mean |\n|---|---|---|---|---|---|---|"
    )
    for name, by_seed in latest.items():
        acc = [r["dev_accuracy"] * 100 for r in by_seed.values()]
        f1 = [r["dev_macro_f1"] * 100 for r in by_seed.values()]
        seeds = ",".join(str(s) for s in sorted(by_seed))
        best, stop = (statistics.mean(r[k] for r in by_seed.values()) for k in ("minutes_to_best", "train_minutes"))
        # a run that stopped within the budget had its best within it (records older than the field)
        budget = [r.get("dev_accuracy_15min") or (r["dev_accuracy"] if r["train_minutes"] <= BUDGET_MINUTES else None) for r in by_seed.values()]
        within = f"{statistics.mean(budget) * 100:.2f}%" if None not in budget else "-"
        print(
            f"| {name} | {seeds} | {statistics.mean(acc):.2f}% | {min(acc):.2f} - {max(acc):.2f} | {statistics.mean(f1):.2f} | {best:.1f} / {stop:.1f} | {within} |"
        )


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--only", default=",".join(VARIANTS), help="comma-separated variants: " + ", ".join(VARIANTS))
    p.add_argument("--minutes", type=float, default=40.0, help="time cap per run (early stopping usually ends it first)")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--seeds", type=int, nargs="+", default=[1], help="train.seed values; each seed is its own run")
    p.add_argument("--summary", action="store_true", help="print the table over seeds and exit")
    p.add_argument("--data", help="SST folder (default: ../shared/data/sst)")
    p.add_argument("--set", action="append", default=[], help="extra override for every variant")
    p.add_argument("--tag", help="filed as VARIANT-TAG (runs/bench-sase-VARIANT-TAG), e.g. for a tuning --set")
    p.add_argument("--record", metavar="RUN", help="only score this trained run folder")
    p.add_argument("--variant", default="sase", help="the name --record files the run under")
    args = p.parse_args()
    if args.summary:
        summary()
        return
    use_jemalloc(sys.argv)  # as `attnkit train` runs: glibc's malloc page-faults at every update here
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    if args.record:
        results = [record(Path(args.record), args.variant, args.data)]
    else:
        results = (run_variant(f"{name}-{args.tag}" if args.tag else name, [*VARIANTS[name], *args.set], args.minutes, args.threads, args.data, seed)
                   for name in args.only.split(",") for seed in args.seeds)  # fmt: skip
    for result in results:
        print(json.dumps(result), flush=True)
        with open(RESULTS, "a", encoding="utf-8") as f:
            f.write(json.dumps(result) + "\n")


if __name__ == "__main__":
    main()
