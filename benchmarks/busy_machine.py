"""Training on a busy machine: toy-reverse's wall time alone and beside one busy-loop process, per OpenMP wait policy.

    .venv/bin/python benchmarks/busy_machine.py [--updates 500] [--repeats 3] [--policies passive libgomp-default]
        [--out benchmarks/results/busy_machine.jsonl]

Each run is the command a user types, `python -m attnkit train toy-reverse --set train.max_steps=N`,
in a fresh process with its own run folder, timed from its start to its exit. A busy run has one
Python `while True: pass` process beside it (started before, killed after): on a 2-core machine,
one core taken. Idle and busy runs alternate, `--repeats` of each. The policies (issue #59):
- passive: what the attnkit command chooses since 0.2.0 (`OMP_WAIT_POLICY=PASSIVE`, attnkit.openmp);
- libgomp-default: what 0.1.0 ran with, libgomp's own default (idle threads spin 300,000 times
  before they sleep), kept by `GOMP_SPINCOUNT=300000`, which attnkit leaves to the user;
- active: `OMP_WAIT_POLICY=ACTIVE` (idle threads never sleep).
Prints one JSON line per policy (median wall seconds idle and busy, each run's, the ratio
busy/idle, torch's threads, the CPU, the date) and writes them to --out. Run it alone on the machine.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results" / "busy_machine.jsonl"
POLICIES = {"passive": {}, "libgomp-default": {"GOMP_SPINCOUNT": "300000"}, "active": {"OMP_WAIT_POLICY": "ACTIVE"}}
BUSY_LOOP = "while True: pass"


def environment(policy: str) -> dict[str, str]:
    """The training process's environment: this one's, without any wait setting, plus the policy's."""
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT", "ATTNKIT_OMP_WAIT_POLICY")}
    return {**env, **POLICIES[policy]}


def train_seconds(updates: int, env: dict[str, str], busy: bool) -> float:
    """Wall seconds of one `attnkit train toy-reverse` of `updates` updates, beside a busy loop if `busy`."""
    loop = subprocess.Popen([sys.executable, "-c", BUSY_LOOP]) if busy else None
    try:
        with tempfile.TemporaryDirectory(prefix="attnkit-busy-") as folder:
            command = [sys.executable, "-m", "attnkit", "train", "toy-reverse", "--out", str(Path(folder) / "run"), "--set", f"train.max_steps={updates}"]
            started = time.perf_counter()
            done = subprocess.run(command, env=env, capture_output=True, text=True)
            seconds = time.perf_counter() - started
    finally:
        if loop is not None:
            loop.kill()
            loop.wait()
    if done.returncode:
        raise SystemExit(f"attnkit train failed ({done.returncode}):\n{done.stderr[-3000:]}")
    return seconds


def measure(policy: str, updates: int, repeats: int) -> dict:
    env = environment(policy)
    runs = {"idle": [], "busy": []}
    for _ in range(repeats):
        for load in runs:
            runs[load].append(round(train_seconds(updates, env, busy=load == "busy"), 1))
    idle, busy = statistics.median(runs["idle"]), statistics.median(runs["busy"])
    return {"policy": policy, "env": POLICIES[policy], "updates": updates, "repeats": repeats, "idle_s": idle, "busy_s": busy,
            "ratio": round(busy / idle, 2), "idle_runs": runs["idle"], "busy_runs": runs["busy"]}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--updates", type=int, default=500, help="updates per training (toy-reverse's preset: 500)")
    parser.add_argument("--repeats", type=int, default=3, help="trainings per case; the medians are reported")
    parser.add_argument("--policies", nargs="+", choices=list(POLICIES), default=["passive", "libgomp-default"])
    parser.add_argument("--out", type=Path, default=RESULTS, help="the JSON lines' file (rewritten)")
    args = parser.parse_args()
    import torch

    from attnkit.precision import cpu_model

    common = {"cpu": cpu_model(), "cores": os.cpu_count(), "threads": torch.get_num_threads(), "date": datetime.date.today().isoformat()}
    lines = []
    for policy in args.policies:
        lines.append(json.dumps({**measure(policy, args.updates, args.repeats), **common}))
        print(lines[-1], flush=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("".join(line + "\n" for line in lines))


if __name__ == "__main__":
    main()
