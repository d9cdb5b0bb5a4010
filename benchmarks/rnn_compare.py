"""RNN decoders against each other and the Transformer: same data, same wall-clock budget.

    .venv/bin/python benchmarks/rnn_compare.py train [--models none bahdanau ...] [--minutes 15]
    .venv/bin/python benchmarks/rnn_compare.py report

`train` trains each model into runs/compare-NAME (replaced) on Multi30k En->De for the same
minutes of wall clock (validation included) with `attnkit train`, one at a time, then translates
test_2016_flickr with beam 4 and appends one JSON line per model to
benchmarks/results/rnn_compare.jsonl: sacreBLEU, chrF, updates, and BLEU per source-length bucket.
The runs need not be made at once (`--models` picks some); the last line of each model counts.
`report` prints the Markdown table and writes the BLEU-against-source-length plot (Bahdanau et al.
2015, fig. 2) to benchmarks/results/rnn_compare_length.png. Nothing else may run on the machine
but two such runs at once with `--set train.threads=1` (each then has one of the two cores; the
`threads` column says which runs were made that way).
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks/results/rnn_compare.jsonl"
RNN = "rnn-bahdanau-m30k"
MODELS = {  # name -> (preset, overrides)
    "none": (RNN, ["model.attention=none"]),
    "context": (RNN, ["model.attention=context"]),
    "bahdanau": (RNN, []),
    "luong-dot": ("rnn-luong-m30k", ["model.score=dot"]),
    "luong-general": ("rnn-luong-m30k", []),
    "luong-concat": ("rnn-luong-m30k", ["model.score=concat"]),
    "transformer": ("m30k-small", []),
}
BUCKETS = [(0, 10), (10, 15), (15, 20), (20, 25), (25, 1000)]  # source words


def bucket_name(lo: int, hi: int) -> str:
    return f"{lo}-{hi - 1}" if hi < 1000 else f"{lo}+"


def train_one(name: str, minutes: float, data: Path, runs: Path, extra: list[str]) -> dict:
    from attnkit.config.schema import Decode
    from attnkit.data.text import read_parallel
    from attnkit.families import load_run
    from attnkit.families.translation.bleu import score_translations
    from attnkit.families.translation.translate import translate
    from attnkit.viz.curves import METRICS_FILE, read_records

    preset, overrides = MODELS[name]
    out = runs / f"compare-{name}"
    shutil.rmtree(out, ignore_errors=True)  # the benchmark's own folder: a new run each time
    sets = [f"train.max_minutes={minutes}", "train.max_steps=null", *overrides, *extra]
    cmd = [sys.executable, "-m", "attnkit", "train", preset, "--out", str(out), "--data", str(data)]
    subprocess.run(cmd + [a for s in sets for a in ("--set", s)], check=True)
    valid = [r for r in read_records(out / METRICS_FILE) if r["kind"] == "valid"]
    pairs = read_parallel(data / "test_2016_flickr.en.gz", data / "test_2016_flickr.de.gz")
    loaded = load_run(out, "best")
    settings = Decode(beam=4, alpha=loaded.run.decode.alpha, batch_size=64)
    hyps = [nbest[0].text for nbest in translate(loaded.model, loaded.vocabs, [s for s, _ in pairs], settings)]
    scores = score_translations(hyps, [r for _, r in pairs])
    by_length = {}
    for lo, hi in BUCKETS:
        idx = [i for i, (s, _) in enumerate(pairs) if lo <= len(s.split()) < hi]
        if idx:
            by_length[bucket_name(lo, hi)] = {"n": len(idx), "bleu": round(score_translations([hyps[i] for i in idx], [pairs[i][1] for i in idx])["bleu"], 2)}
    return {
        "benchmark": "rnn_compare", "model": name, "preset": preset, "overrides": overrides + extra, "minutes": minutes,
        "updates": valid[-1]["step"] if valid else 0, "best_valid_bleu": max((r.get("bleu", 0.0) for r in valid), default=0.0),
        "test_bleu_beam4": round(scores["bleu"], 2), "test_chrf": round(scores["chrf"], 2), "bleu_by_source_length": by_length,
    }  # fmt: skip


def report() -> None:
    latest = {}
    for line in RESULTS.read_text().splitlines():
        record = json.loads(line)
        latest[record["model"]] = record
    print("| model | minutes | threads | updates | test_2016 BLEU (beam 4) | chrF |\n|---|---|---|---|---|---|")
    for name in MODELS:
        if name in latest:
            r = latest[name]
            threads = next((o.split("=")[1] for o in r["overrides"] if o.startswith("train.threads=")), "2")
            print(f"| {name} | {r['minutes']} | {threads} | {r['updates']} | {r['test_bleu_beam4']} | {r['test_chrf']} |")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.5))
    names = [bucket_name(lo, hi) for lo, hi in BUCKETS]
    for name, r in latest.items():
        xs = [i for i, b in enumerate(names) if b in r["bleu_by_source_length"]]
        ax.plot(xs, [r["bleu_by_source_length"][names[i]]["bleu"] for i in xs], marker="o", label=name)
    ax.set_xticks(range(len(names)), names)
    ax.set_xlabel("source sentence length (words)")
    ax.set_ylabel("test_2016 sacreBLEU (beam 4)")
    ax.set_title(f"Multi30k En->De, {max(r['minutes'] for r in latest.values()):g} minutes of training each")
    ax.legend()
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(RESULTS.with_name("rnn_compare_length.png"), dpi=120)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="command", required=True)
    t = sub.add_parser("train")
    t.add_argument("--models", nargs="+", choices=list(MODELS), default=list(MODELS))
    t.add_argument("--minutes", type=float, default=15.0)
    t.add_argument("--data", type=Path, default=ROOT.parent / "shared/data/multi30k")
    t.add_argument("--runs", type=Path, default=ROOT / "runs")
    t.add_argument("--set", action="append", default=[], help="extra overrides for every model")
    sub.add_parser("report")
    args = p.parse_args()
    if args.command == "report":
        report()
        return
    for name in args.models:
        record = train_one(name, args.minutes, args.data, args.runs, args.set)
        print(json.dumps(record), flush=True)
        with RESULTS.open("a") as f:
            f.write(json.dumps(record) + "\n")


if __name__ == "__main__":
    main()
