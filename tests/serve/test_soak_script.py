"""benchmarks/soak_serve.py's pieces on a live test server for two seconds: answers counted per window, memory read."""

from __future__ import annotations

import os

from attnkit.families import load_run
from attnkit.serve.app import create_app
from benchmark_scripts import load_benchmark

soak_serve = load_benchmark("soak_serve")


def test_a_short_soak_counts_answers_per_window_and_reads_memory(serve_app, tiny_transformer_run):
    server = serve_app(create_app({"tiny": load_run(tiny_transformer_run)}))
    result = soak_serve.soak(server.url, os.getpid(), clients=2, seconds=2.0, warmup=0.5, window=1.0)
    assert result["requests"] > 0 and result["errors"] == 0
    assert sum(w["requests"] for w in result["per_window"]) == result["requests"] and [w["from_s"] for w in result["per_window"]] == list(
        range(len(result["per_window"]))
    )
    assert set(result["rss_kib"]) == {"start", "after_warmup", "end"} and all(v > 0 for v in result["rss_kib"].values())
    assert result["growth_after_warmup"] == round(result["rss_kib"]["end"] / result["rss_kib"]["after_warmup"] - 1, 4)


def test_windows_keep_errors_apart_from_latencies():
    answers = [(0.1, 0.010, 200), (0.2, 0.030, 200), (0.3, 5.0, 0), (1.5, 0.020, 500)]
    assert soak_serve.per_minute(answers, 1.0) == [
        {"from_s": 0, "requests": 3, "errors": 1, "p50_ms": 20.0, "p99_ms": 30.0},
        {"from_s": 1, "requests": 1, "errors": 1, "p50_ms": None, "p99_ms": None},
    ]
