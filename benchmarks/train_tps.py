"""Training throughput of M30K-small (PEERS.md): target tokens/s over updates after a warm-up, peak RSS.

    .venv/bin/python benchmarks/train_tps.py [--updates 60] [--skip 20] [--precision fp32|bf16] [--data DIR]
        [--allocator jemalloc|system]

Prints one JSON line. Run it alone on the machine (2 cores: anything else running skews it).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import time
from pathlib import Path

import torch

from attnkit.allocator import MARKER, limit_primitive_cache, use_jemalloc
from attnkit.data.batching import TokenBatcher
from attnkit.families import family_of, load_config
from attnkit.precision import pick_device
from attnkit.train.loop import Trainer
from attnkit.train.state import TrainState

PRESET = Path(__file__).resolve().parents[1] / "src/attnkit/presets/m30k-small.yaml"


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--updates", type=int, default=60)
    p.add_argument("--skip", type=int, default=20)
    p.add_argument("--precision", default="fp32")
    p.add_argument("--data", default=None)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--set", action="append", default=[])
    p.add_argument("--device", default="cpu")
    p.add_argument("--allocator", choices=["jemalloc", "system"], default="jemalloc", help="as `attnkit train` (allocator.py)")
    args = p.parse_args()
    if args.allocator == "jemalloc":
        use_jemalloc(sys.argv)
    limit_primitive_cache()  # as `attnkit train`
    torch.set_num_threads(args.threads)
    run = load_config(PRESET, [f"train.precision={args.precision}", f"train.device={args.device}", *args.set])
    task = family_of(run.model.kind).task(run, Path("runs/bench"), args.data)
    device = pick_device(args.device)
    model = task.build_model().to(device)
    trainer = Trainer(run, model, device, task)
    batches = TokenBatcher(*task.train_lengths, max_tokens=run.train.max_tokens, shuffle=True, seed=1).epoch(0)
    state, tokens, src_tokens, seconds = TrainState(), 0, 0, 0.0
    model.train()
    for i in range(args.updates):
        group = [task.collate(idx) for idx in batches[i * run.train.accum : (i + 1) * run.train.accum]]
        if device.type == "cuda":
            torch.cuda.synchronize()
        started = time.perf_counter()
        trainer.update(group, state)
        if device.type == "cuda":
            torch.cuda.synchronize()
        if i >= args.skip:
            seconds += time.perf_counter() - started
            tokens += sum(b.n_tgt_tokens for b in group)
            src_tokens += sum(b.n_src_tokens for b in group)
    print(json.dumps({
        "benchmark": "train_tps", "model": "m30k-small", "precision": args.precision, "device": args.device,
        "threads": args.threads, "updates_timed": args.updates - args.skip,
        "tgt_tokens_per_update": round(tokens / (args.updates - args.skip)),
        "tgt_tok_s": round(tokens / seconds), "src_tgt_tok_s": round((tokens + src_tokens) / seconds),
        "peak_rss_gb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6, 3),
        "params_m": round(sum(p.numel() for p in model.parameters()) / 1e6, 2),
        "overrides": args.set, "allocator": os.environ.get(MARKER, "system"),
    }))  # fmt: skip


if __name__ == "__main__":
    main()
