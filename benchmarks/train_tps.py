"""Training throughput of a preset (M30K-small by default, PEERS.md): items/s over updates after a warm-up, peak RSS.

    .venv/bin/python benchmarks/train_tps.py [--preset m30k-small] [--updates 60] [--skip 20] [--precision fp32|bf16]
        [--data DIR] [--allocator jemalloc|system] [--profile]

Items are the task's unit (target tokens for translation, parsing and captioning; examples for a
classifier). `--profile` also profiles the timed updates (torch.profiler, CPU) and adds where the
time goes: the optimizer step, and the operators' self time by kind (`KINDS`), as shares.
Updates draw their batches epoch after epoch, as training does. Every batch of the first epoch has
shapes oneDNN (bf16 matmuls on a CPU) has not seen, and it compiles a kernel for each new matmul
shape (docs/training.md); skipping one epoch (`--skip 130 --updates 190` on Multi30k, 130 batches
of 4,096 tokens) measures a long run's steady state instead.
Prints one JSON line. Run it alone on the machine (2 cores: anything else running skews it).
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import os
import resource
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import torch

from attnkit.allocator import MARKER, limit_primitive_cache, use_jemalloc
from attnkit.commands.presets import config_path
from attnkit.data.batching import TokenBatcher
from attnkit.families import load_config, run_family_of
from attnkit.precision import pick_device
from attnkit.train.loop import Trainer
from attnkit.train.state import TrainState

# Operator kinds by name (first match wins); the rest is "other" (element-wise arithmetic, dropout, ...).
KINDS = {
    "matmul": ("aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm", "aten::addbmm", "aten::_mkl_linear"),
    "rnn kernels": ("mkldnn_rnn", "aten::lstm", "aten::gru", "aten::_thnn_fused"),
    "convolution": ("convolution", "aten::mkldnn_conv", "conv2d"),
    "loss": ("nll_loss", "cross_entropy", "CrossEntropy", "log_softmax"),
    "attention kernels and softmax": ("scaled_dot_product", "softmax"),
    "dropout": ("bernoulli", "dropout", "aten::random_"),  # random_: the 16-bit masks (models/dropout.py)
    "layer norm": ("layer_norm",),
    "embedding": ("embedding",),
    "copies and layout": ("aten::copy_", "aten::_to_copy", "aten::cat", "aten::contiguous", "aten::clone", "aten::index",
                          "aten::gather", "aten::scatter", "aten::masked_fill", "aten::where", "aten::fill_", "aten::zero_"),
    "allocation": ("aten::empty", "aten::resize_", "aten::zeros", "aten::ones", "aten::full"),
}  # fmt: skip


def kind_of(name: str) -> str:
    return next((kind for kind, keys in KINDS.items() if any(key in name for key in keys)), "other")


def time_shares(profile: torch.profiler.profile, wall_seconds: float) -> dict:
    """Shares of the profiled wall time: the optimizer step (its record_function range), operator
    self time by kind (all threads' CPU time, so it can pass 1 with 2 threads), and what no operator
    accounts for (Python, the framework, waiting)."""
    events = profile.key_averages()
    optimizer = sum(e.cpu_time_total for e in events if e.key.startswith("Optimizer.step#")) / 1e6
    kinds: dict[str, float] = {}
    for e in events:
        if e.key.startswith(("aten::", "mkldnn")) or "rnn" in e.key or e.key.startswith("_"):  # _SmoothedCrossEntropy: the loss's autograd function
            kinds[kind_of(e.key)] = kinds.get(kind_of(e.key), 0.0) + e.self_cpu_time_total / 1e6
    ops = sum(kinds.values())
    return {"optimizer_step": round(optimizer / wall_seconds, 3), "operators": {k: round(v / wall_seconds, 3) for k, v in sorted(kinds.items(), key=lambda kv: -kv[1])},
            "not_in_operators": round(max(wall_seconds - ops, 0.0) / wall_seconds, 3)}  # fmt: skip


def _groups(batcher: TokenBatcher, accum: int) -> Iterator[list]:
    """The batches of one update after another, epoch after epoch (as the trainer draws them)."""
    for epoch in itertools.count():
        batches = batcher.epoch(epoch)
        yield from (batches[i : i + accum] for i in range(0, len(batches) - accum + 1, accum))


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--preset", default="m30k-small", help="a preset name (`attnkit presets`)")
    p.add_argument("--profile", action="store_true", help="add where the time goes (torch.profiler)")
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
    run = load_config(
        config_path(args.preset),  # the presets of the code measured (PYTHONPATH=OLD/src for a before/after)
        [f"train.precision={args.precision}", f"train.device={args.device}", *args.set],
    )
    limit_primitive_cache(getattr(run.train, "kernel_cache", 64))  # as `attnkit train` (older code: 64)
    torch.set_num_threads(args.threads)
    task = run_family_of(run).task(run, Path("runs/bench"), args.data)
    device = pick_device(args.device)
    model = task.build_model().to(device)
    trainer = Trainer(run, model, device, task)
    groups = _groups(TokenBatcher(*task.train_lengths, max_tokens=run.train.max_tokens, shuffle=True, seed=1), run.train.accum)
    state, tokens, src_tokens, seconds = TrainState(), 0, 0, 0.0
    model.train()
    profiler = torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) if args.profile else contextlib.nullcontext()
    for i in range(args.updates):
        group = [task.collate(idx) for idx in next(groups)]
        if i == args.skip:
            profiler.__enter__()
        if device.type == "cuda":
            torch.cuda.synchronize()
        started = time.perf_counter()
        trainer.update(group, state)
        if device.type == "cuda":
            torch.cuda.synchronize()
        if i >= args.skip:
            seconds += time.perf_counter() - started
            tokens += sum(task.size(b) for b in group)
            src_tokens += sum(getattr(b, "n_src_tokens", 0) for b in group)
    if args.updates > args.skip:
        profiler.__exit__(None, None, None)
    print(json.dumps({
        "benchmark": "train_tps", "model": args.preset, "precision": args.precision, "device": args.device,
        "threads": args.threads, "updates_timed": args.updates - args.skip, "unit": task.unit,
        "tgt_tokens_per_update": round(tokens / (args.updates - args.skip)),
        "tgt_tok_s": round(tokens / seconds), "src_tgt_tok_s": round((tokens + src_tokens) / seconds),
        **({"time": time_shares(profiler, seconds)} if args.profile else {}),
        "peak_rss_gb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6, 3),
        "params_m": round(sum(p.numel() for p in model.parameters()) / 1e6, 2),
        "overrides": args.set, "allocator": os.environ.get(MARKER, "system"),
    }))  # fmt: skip


if __name__ == "__main__":
    main()
