"""Soak of `attnkit serve`: many clients for a long time; errors, latency over time and the server's memory.

    .venv/bin/python benchmarks/soak_serve.py [RUN] [--clients 32] [--seconds 600] [--warmup 60]

The script starts `attnkit serve RUN` on a free 127.0.0.1 port (no RUN: the tests' tiny translation run,
`tests/conftest.py`, built in a temporary folder), then runs --clients threads for --seconds, each posting
one text to /v1/translate (texts of 1 to 12 words, cycling) as soon as its previous answer arrives. It
records every answer's latency and status, and the server's resident memory (/proc/PID/status VmRSS) at
the start, after --warmup seconds and at the end. It prints one JSON object (errors, p50/p99 latency per
minute, RSS at start / after warm-up / end and the growth after warm-up, CPU, date) and writes it to
benchmarks/results/soak_serve.json; exits 1 on any error or a growth over --max-growth (5%) after
warm-up, or if the server stops answering. On a 2-core machine it measures stability, not speed.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import threading
import time
from datetime import datetime, timezone
from pathlib import Path

import httpx

from fuzz_serve import TESTS, _load_test_helper, cpu_name  # beside this script
from serving import alive, serving

RESULTS = Path(__file__).parent / "results" / "soak_serve.json"
WORDS = [f"t{i}" for i in range(10)]


def rss_kib(pid: int) -> int:
    """The process's resident memory in KiB (Linux)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError(f"no VmRSS for process {pid}")


def client(url: str, k: int, stop_at: float, began: float, answers: list[tuple[float, float, int]]) -> None:
    """Post texts until `stop_at`; each answer is (seconds since `began`, latency s, status; 0: no answer)."""
    with httpx.Client(base_url=url, timeout=120) as http:
        i = k
        while time.monotonic() < stop_at:
            text = " ".join(WORDS[(i + j) % len(WORDS)] for j in range(1 + i % 12))
            sent = time.monotonic()
            try:
                status = http.post("/v1/translate", json={"texts": [text]}).status_code
            except httpx.HTTPError:
                status = 0
            answers.append((sent - began, time.monotonic() - sent, status))  # list.append is atomic
            i += 1


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def per_minute(answers: list[tuple[float, float, int]], window: float) -> list[dict]:
    """p50/p99 latency (ms), requests and errors per `window` seconds of the soak."""
    out = []
    for start in range(0, int(max(a[0] for a in answers)) + 1, int(window)):
        inside = [a for a in answers if start <= a[0] < start + window]
        ok = [a[1] for a in inside if a[2] == 200]
        out.append({"from_s": start, "requests": len(inside), "errors": len(inside) - len(ok),
                    "p50_ms": round(1000 * statistics.median(ok), 1) if ok else None,
                    "p99_ms": round(1000 * percentile(ok, 0.99), 1) if ok else None})  # fmt: skip
    return out


def soak(url: str, pid: int, clients: int, seconds: float, warmup: float, window: float) -> dict:
    answers: list[tuple[float, float, int]] = []
    rss = {"start": rss_kib(pid)}
    began = time.monotonic()
    threads = [threading.Thread(target=client, args=(url, k, began + seconds, began, answers)) for k in range(clients)]
    for thread in threads:
        thread.start()
    time.sleep(min(warmup, seconds))
    rss["after_warmup"] = rss_kib(pid)
    for thread in threads:
        thread.join()
    rss["end"] = rss_kib(pid)
    ok = [a[1] for a in answers if a[2] == 200]
    return {
        "requests": len(answers), "errors": len(answers) - len(ok),
        "p50_ms": round(1000 * statistics.median(ok), 1) if ok else None, "p99_ms": round(1000 * percentile(ok, 0.99), 1) if ok else None,
        "per_window": per_minute(answers, window), "rss_kib": rss, "growth_after_warmup": round(rss["end"] / rss["after_warmup"] - 1, 4),
    }  # fmt: skip


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("run", nargs="?", help="run folder to serve (default: the tests' tiny translation run)")
    p.add_argument("--clients", type=int, default=32)
    p.add_argument("--seconds", type=float, default=600.0, help="how long the clients post")
    p.add_argument("--warmup", type=float, default=60.0, help="memory growth is measured from this many seconds in")
    p.add_argument("--window", type=float, default=60.0, help="latency percentiles per this many seconds")
    p.add_argument("--max-growth", type=float, default=0.05, help="resident memory growth after warm-up that fails the soak")
    p.add_argument("--no-save", action="store_true", help="print only; do not write " + str(RESULTS))
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        if args.run is None:
            tests = _load_test_helper(TESTS / "conftest.py")
        run = args.run or str(tests.make_tiny_run(Path(tmp) / "tiny", tests.TINY_TRANSFORMER))
        with serving([run]) as (url, server):
            result = soak(url, server.pid, args.clients, args.seconds, args.warmup, args.window)
            result["alive_after"] = alive(url)
    result = {"benchmark": "soak_serve", "run": Path(run).name, "clients": args.clients, "seconds": args.seconds, "warmup": args.warmup, **result,
              "cpus": len(os.sched_getaffinity(0)), "cpu": cpu_name(), "date": datetime.now(timezone.utc).isoformat(timespec="seconds")}  # fmt: skip
    print(json.dumps(result), flush=True)
    if not args.no_save:
        RESULTS.parent.mkdir(parents=True, exist_ok=True)
        RESULTS.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    if result["errors"] or not result["alive_after"] or result["growth_after_warmup"] > args.max_growth:
        sys.exit(1)


if __name__ == "__main__":
    main()
