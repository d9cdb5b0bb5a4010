"""An interleaved A/B of two source trees: the same benchmark command, run alternately on each.

    .venv/bin/python benchmarks/ab.py --a OLD_TREE --b NEW_TREE [--rounds 4] [--name NAME] --key KEY -- CMD ARG...

`{tree}` in CMD is replaced by each tree's path; the command runs with `PYTHONPATH=TREE/src` in
the order A B B A A B B A ... (each pair of rounds balanced, so a drift of the machine falls on both
trees alike). Each run must print JSON lines; `--key` names the figure read from them (one value per
line: a benchmark printing one line per setting, such as `decode_speed.py --beams 1 4`, gives one
series per line, `key[0]`, `key[1]`, ...). Prints one JSON line: per series the values, the medians
of A and B, and B / A. Run it alone on the machine (2 cores): the figures are timings.

Issue 51's check that a redesign changed no speed:

    .venv/bin/python benchmarks/ab.py --a /tmp/base --b . --key tgt_tok_s --name train_toy -- \
        python {tree}/benchmarks/train_tps.py --preset toy-reverse --updates 60 --skip 10
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

from attnkit.precision import cpu_model


def run_once(tree: Path, command: list[str], key: str) -> list[float]:
    """The `key` of every JSON line `command` prints, run on `tree`."""
    env = {**os.environ, "PYTHONPATH": str(tree / "src")}
    argv = [sys.executable if c == "python" else c.replace("{tree}", str(tree)) for c in command]
    done = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=tree)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} on {tree} failed ({done.returncode}): {done.stderr.strip().splitlines()[-1:]}")
    values = [json.loads(line)[key] for line in done.stdout.splitlines() if line.startswith("{")]
    if not values:
        raise SystemExit(f"{' '.join(argv)} on {tree} printed no JSON line with {key!r}")
    return values


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--a", required=True, type=Path, help="the baseline tree")
    p.add_argument("--b", required=True, type=Path, help="the tree measured against it")
    p.add_argument("--key", required=True, help="the figure to read from the command's JSON lines")
    p.add_argument("--rounds", type=int, default=4, help="runs per tree (ABBA order)")
    p.add_argument("--name", default="ab")
    p.add_argument("command", nargs=argparse.REMAINDER, help="-- CMD ARG... ({tree} is each tree's path)")
    args = p.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    trees = {"a": args.a.resolve(), "b": args.b.resolve()}
    runs: dict[str, list[list[float]]] = {"a": [], "b": []}
    for i in range(args.rounds):
        for side in ("ab", "ba")[i % 2]:
            runs[side].append(run_once(trees[side], command, args.key))
            print(f"round {i + 1}/{args.rounds} {side}: {runs[side][-1]}", file=sys.stderr)
    series = {}
    for j in range(len(runs["a"][0])):
        a, b = [r[j] for r in runs["a"]], [r[j] for r in runs["b"]]
        series[f"{args.key}[{j}]"] = {"a": a, "b": b, "median_a": statistics.median(a), "median_b": statistics.median(b),
                                      "b_over_a": round(statistics.median(b) / statistics.median(a), 3)}  # fmt: skip
    print(json.dumps({
        "benchmark": args.name, "a": str(trees["a"]), "b": str(trees["b"]), "command": command, "rounds": args.rounds,
        "series": series, "cpu": cpu_model(), "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
    }))  # fmt: skip


if __name__ == "__main__":
    main()
