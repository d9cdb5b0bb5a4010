"""Load test of `attnkit serve`: concurrent clients against a served model, with and without batching.

    .venv/bin/python benchmarks/load_test.py [RUN] [--clients 32] [--seconds 60] [--data DIR] [--workers N] [--engine ctranslate2]

For each mode the script starts `attnkit serve RUN` on a free 127.0.0.1 port (`batched`: the given
--window-ms/--max-batch; `unbatched`: --max-batch 1, every request its own model call; both with
--workers decoding threads, `serve --workers`, and --engine), waits for
/healthz, warms up, then runs --clients concurrent clients for --seconds, each posting one
Multi30k test_2016 sentence per request (with the run's decode settings unless --beam) as soon as
its previous answer arrives. It prints one JSON line per mode (requests/s, p50/p99 latency, errors,
the server's batching counters, the settings) and appends it to benchmarks/results/load_test.jsonl.
Exits 1 if any request failed. Run it alone on the machine (2 cores: anything else skews it).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

import httpx

from attnkit.data.text import read_lines
from serving import record, serving  # beside this script

RESULTS = Path(__file__).parent / "results" / "load_test.jsonl"


def serve_arguments(args: argparse.Namespace, max_batch: int) -> list[str]:
    """`attnkit serve`'s arguments for one mode: the run, one text a request, the batching and decoding settings."""
    return [args.run, "--batch-window-ms", str(args.window_ms), "--max-batch", str(max_batch), "--max-texts", "1", "--dtype", args.dtype,
            "--engine", args.engine, *(["--workers", str(args.workers)] if args.workers else [])]  # fmt: skip


async def client(http: httpx.AsyncClient, sentences: list[str], start: int, stop_at: float, body: dict, out: dict) -> None:
    i = start
    while time.monotonic() < stop_at:
        began = time.perf_counter()
        try:
            response = await http.post("/v1/translate", json={**body, "texts": [sentences[i % len(sentences)]]})
            ok = response.status_code == 200
        except httpx.HTTPError:
            ok = False
        if ok:
            out["latencies"].append(time.perf_counter() - began)
        else:
            out["errors"] += 1
        i += 1


async def load(url: str, sentences: list[str], clients: int, seconds: float, body: dict) -> dict:
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
    async with httpx.AsyncClient(base_url=url, limits=limits, timeout=120) as http:
        warm = {"latencies": [], "errors": 0}
        await asyncio.gather(*(client(http, sentences, 7 * k, time.monotonic() + 3, body, warm) for k in range(clients)))
        out = {"latencies": [], "errors": 0}
        began = time.monotonic()
        await asyncio.gather(*(client(http, sentences, 31 * k, began + seconds, body, out) for k in range(clients)))
        out["elapsed"] = time.monotonic() - began
    return out


def measure(args: argparse.Namespace, mode: str, sentences: list[str]) -> dict:
    max_batch = args.max_batch if mode == "batched" else 1
    with serving(serve_arguments(args, max_batch)) as (url, _):
        body = {} if args.beam is None else {"beam": args.beam}
        out = asyncio.run(load(url, sentences, args.clients, args.seconds, body))
        info = httpx.get(f"{url}/v1/models").json()[0]
    latencies = sorted(out["latencies"])
    p99 = latencies[min(len(latencies) - 1, int(0.99 * len(latencies)))] if latencies else None
    stats = info["batching"]
    return {
        "benchmark": "load_test", "mode": mode, "run": args.run, "checkpoint": info["checkpoint"],
        "requests_per_s": round(len(latencies) / out["elapsed"], 2), "requests": len(latencies), "errors": out["errors"],
        "p50_ms": round(1000 * statistics.median(latencies), 1) if latencies else None,
        "p99_ms": round(1000 * p99, 1) if p99 is not None else None,
        "mean_batch": round(stats["texts"] / max(stats["calls"], 1), 2), "largest_batch": stats["largest"],
        "clients": args.clients, "seconds": args.seconds, "window_ms": args.window_ms, "max_batch": max_batch, "workers": stats["workers"],
        "engine": info["engine"],
        "beam": info["beam"] if args.beam is None else args.beam, "alpha": info["alpha"], "dtype": args.dtype,
        "texts_per_request": 1, "cpus": os.cpu_count(), "note": args.note,
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
    }  # fmt: skip


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("run", nargs="?", default="runs/m30k-bf16-w600", help="run folder to serve (m30k-small)")
    p.add_argument("--clients", type=int, default=32)
    p.add_argument("--seconds", type=float, default=60.0, help="measured time per mode (after a 3 s warm-up)")
    p.add_argument("--data", default="data/multi30k", help="folder with test_2016_flickr.en.gz (else ../shared/data/multi30k)")
    p.add_argument("--beam", type=int, help="beam size (default: the run's decode.beam)")
    p.add_argument("--window-ms", type=float, default=5.0, help="batching window of the batched mode")
    p.add_argument("--max-batch", type=int, default=32, help="texts per model call in the batched mode")
    p.add_argument("--workers", type=int, help="batches decoded at once (attnkit serve --workers; default: serve's, one per thread)")
    p.add_argument("--engine", choices=["attnkit", "ctranslate2"], default="attnkit", help="what decodes (attnkit serve --engine)")
    p.add_argument("--dtype", choices=["fp32", "bf16"], default="fp32")
    p.add_argument("--modes", nargs="+", choices=["batched", "unbatched"], default=["unbatched", "batched"])
    p.add_argument("--note", default="", help="a remark stored with the result (e.g. what else was running)")
    p.add_argument("--no-save", action="store_true", help="print only; do not append to " + str(RESULTS))
    args = p.parse_args()
    source = Path(args.data) / "test_2016_flickr.en.gz"
    if not source.is_file():
        source = Path("../shared/data/multi30k/test_2016_flickr.en.gz")
    sentences = read_lines(source)
    results = [measure(args, mode, sentences) for mode in args.modes]
    if len(results) == 2:
        unbatched, batched = sorted(results, key=lambda r: r["mode"] == "batched")
        batched["speedup"] = round(batched["requests_per_s"] / unbatched["requests_per_s"], 2)
    for result in results:
        record(result, RESULTS, save=not args.no_save)
    if any(r["errors"] for r in results):
        sys.exit(1)


if __name__ == "__main__":
    main()
