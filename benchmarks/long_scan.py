"""The long road's scan of one layer against SDPA on the same layer, in one process.

    PYTHONPATH=src .venv/bin/python benchmarks/long_scan.py [--tokens 8192] [--repeats 3] [--threads 1] [--profile]

The tiny random Llama of `long_context.py` reads --tokens random ids once, keeping layer 1's
post-rotary queries and keys (`capture`); then, --repeats times each, PyTorch's SDPA
(`scaled_dot_product_attention`, causal, grouped-query) on that layer's queries, keys and values,
and `scan.scan_layer` on it (summaries, pooled maps, one rollout row). It prints the minimum
wall-clock and CPU seconds of each and their ratios, as one JSON line (the minimum: the machine may
be shared; with --threads 1 the CPU seconds hardly depend on the other processes). With
--profile, the scan's cProfile (top functions by own time) follows.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import pstats
import time

import torch

from attnkit.sources.hf.long.capture import IMPLEMENTATION, capturing, register
from attnkit.sources.hf.long.options import POOLS, LongOptions
from attnkit.sources.hf.long.rollout import RolloutStep, start
from attnkit.sources.hf.long.scan import scan_layer
from long_context import _model


def _best(repeats: int, work) -> tuple[float, float]:
    """The least wall-clock and the least CPU seconds (this process's threads together) of `repeats` runs of `work`."""
    wall, cpu = [], []
    for _ in range(repeats):
        t, c = time.perf_counter(), time.process_time()
        work()
        wall.append(time.perf_counter() - t)
        cpu.append(time.process_time() - c)
    return min(wall), min(cpu)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", type=int, default=8192)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, help="torch threads (default: torch's); 1 on a shared machine")
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    n = args.tokens
    register()
    model = _model(n, IMPLEMENTATION)
    x = torch.randint(3, model.config.vocab_size, (1, n), generator=torch.Generator().manual_seed(0))  # (1, N)
    with capturing(frozenset({1})) as capture, torch.inference_mode():
        model(input_ids=x, logits_to_keep=1)
    layer = capture.kept[1]
    q, k = layer.query[None], layer.key[None]  # (1, H, N, D), (1, Hkv, N, D)
    v = torch.randn_like(k)  # (1, Hkv, N, D): the values' content does not change SDPA's time

    def sdpa():
        with torch.inference_mode():
            torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True, scale=layer.scaling, enable_gqa=True)

    def scan():
        scan_layer(layer, LongOptions().window, POOLS, RolloutStep(start([n - 1], n)))

    (sdpa_s, sdpa_cpu), (scan_s, scan_cpu) = _best(args.repeats, sdpa), _best(args.repeats, scan)
    print(json.dumps({"tokens": n, "threads": torch.get_num_threads(), "sdpa_s": round(sdpa_s, 3), "scan_s": round(scan_s, 3),
                      "ratio": round(scan_s / sdpa_s, 1), "sdpa_cpu_s": round(sdpa_cpu, 3), "scan_cpu_s": round(scan_cpu, 3),
                      "cpu_ratio": round(scan_cpu / sdpa_cpu, 1)}))  # fmt: skip
    if args.profile:
        profile = cProfile.Profile()
        profile.runcall(scan)
        pstats.Stats(profile).sort_stats("tottime").print_stats(15)


if __name__ == "__main__":
    main()
