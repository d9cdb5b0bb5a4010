"""Forward+backward time and peak memory: attnkit MultiHeadAttention vs torch.nn.MultiheadAttention.

Self-attention with a key padding mask, for (B, T, D) in {(32, 32, 256), (16, 128, 512),
(4, 512, 512)} with 8 heads (4 for D = 256), once with ``need_weights=False`` (both use
``F.scaled_dot_product_attention``) and once with ``need_weights=True`` (both take the explicit
path; torch averages the weights over heads, attnkit returns them per head). Both modules hold the
same weights. Prints one JSON line per case and a summary line with ratios ours / torch (below 1 =
attnkit faster or smaller).

Time: median over ``--repeats`` interleaved runs (ours, torch, torch, ours, ...) after
``--warmup`` runs, each run = forward + backward of ``sum(output * grad)`` into the input and all
parameters (gradients reset to None before each run).

Peak memory, measured once per module in the same process:
- cpu: the profiler's allocator events (``torch.profiler`` with ``profile_memory=True``): the
  running sum of every allocation and free made by the PyTorch CPU allocator during one
  forward+backward, maximum taken, i.e. the peak of tensor bytes held above what was live before.
  Memory that BLAS/oneDNN allocate outside the PyTorch allocator is not counted (the same kernels
  run for both modules).
- cuda: ``torch.cuda.max_memory_allocated()`` after ``reset_peak_memory_stats()``, minus the bytes
  allocated before the run.

Usage: python benchmarks/mha_vs_torch.py [--device cpu|cuda] [--threads 2] [--repeats 30]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable, Iterator

import torch
from torch import nn

from attnkit.attention import MultiHeadAttention, padding_mask

CASES = [(32, 32, 256, 4), (16, 128, 512, 8), (4, 512, 512, 8)]


def copy_into_torch(ours: MultiHeadAttention) -> nn.MultiheadAttention:
    """A torch.nn.MultiheadAttention holding the same weights as ``ours``."""
    ref = nn.MultiheadAttention(ours.d_model, ours.n_heads, batch_first=True)
    with torch.no_grad():
        ref.in_proj_weight.copy_(torch.cat([ours.q_proj.weight, ours.k_proj.weight, ours.v_proj.weight]))
        ref.in_proj_bias.copy_(torch.cat([ours.q_proj.bias, ours.k_proj.bias, ours.v_proj.bias]))
        ref.out_proj.weight.copy_(ours.out_proj.weight)
        ref.out_proj.bias.copy_(ours.out_proj.bias)
    return ref


def make_step(module: nn.Module, call: Callable[[torch.Tensor], torch.Tensor], x: torch.Tensor, grad: torch.Tensor):
    """One training step: forward, backward, gradients cleared first."""

    def step() -> None:
        x.grad = None
        for p in module.parameters():
            p.grad = None
        out = call(x)  # (B, T, D)
        out.backward(grad)

    return step


def time_pair(steps: list[Callable[[], None]], device: torch.device, warmup: int, repeats: int) -> list[float]:
    """Median seconds per step for each step function, runs interleaved in alternating order."""
    sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
    for _ in range(warmup):
        for step in steps:
            step()
    times: list[list[float]] = [[] for _ in steps]
    for r in range(repeats):
        order = range(len(steps)) if r % 2 == 0 else reversed(range(len(steps)))
        for i in order:
            sync()
            start = time.perf_counter()
            steps[i]()
            sync()
            times[i].append(time.perf_counter() - start)
    return [statistics.median(t) for t in times]


def _walk(nodes) -> Iterator:
    for node in nodes:
        yield node
        yield from _walk(node.children)


def peak_bytes(step: Callable[[], None], device: torch.device) -> int:
    """Peak bytes allocated above the starting level during one step (method in the module docstring)."""
    if device.type == "cuda":
        torch.cuda.synchronize()
        base = torch.cuda.memory_allocated()
        torch.cuda.reset_peak_memory_stats()
        step()
        torch.cuda.synchronize()
        return torch.cuda.max_memory_allocated() - base
    from torch._C._profiler import _EventType
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        step()
    tree = prof.profiler.kineto_results.experimental_event_tree()
    events = [n for n in _walk(tree) if n.tag == _EventType.Allocation]
    live = peak = 0
    for node in sorted(events, key=lambda n: n.start_time_ns):
        if node.extra_fields.device.type == "cpu":
            live += node.extra_fields.alloc_size
            peak = max(peak, live)
    return peak


def run_case(b: int, t: int, d: int, h: int, need_weights: bool, args: argparse.Namespace) -> dict:
    device = torch.device(args.device)
    torch.manual_seed(0)
    ours = MultiHeadAttention(d, h).to(device)
    ref = copy_into_torch(ours).to(device)
    x = torch.randn(b, t, d, device=device, requires_grad=True)  # (B, T, D)
    grad = torch.randn(b, t, d, device=device)  # (B, T, D)
    lengths = torch.randint(t // 2, t + 1, (b,), device=device)  # (B,)
    lengths[0] = t
    keep = padding_mask(lengths, t)  # (B, 1, T)
    key_padding_mask = ~keep.squeeze(1)  # (B, T), True = ignore (torch's rule)
    ours_step = make_step(ours, lambda x_: ours(x_, x_, x_, keep, need_weights=need_weights)[0], x, grad)
    torch_step = make_step(ref, lambda x_: ref(x_, x_, x_, key_padding_mask=key_padding_mask, need_weights=need_weights)[0], x, grad)
    t_ours, t_torch = time_pair([ours_step, torch_step], device, args.warmup, args.repeats)
    m_ours, m_torch = peak_bytes(ours_step, device), peak_bytes(torch_step, device)
    return {
        "case": f"B{b}_T{t}_D{d}_H{h}",
        "B": b,
        "T": t,
        "D": d,
        "H": h,
        "need_weights": need_weights,
        "device": device.type,
        "threads": torch.get_num_threads(),
        "ms_ours": round(t_ours * 1e3, 3),
        "ms_torch": round(t_torch * 1e3, 3),
        "time_ratio": round(t_ours / t_torch, 3),
        "peak_mib_ours": round(m_ours / 2**20, 2),
        "peak_mib_torch": round(m_torch / 2**20, 2),
        "mem_ratio": round(m_ours / m_torch, 3) if m_torch else None,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    parser.add_argument("--threads", type=int, default=2, help="torch.set_num_threads (CPU)")
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--repeats", type=int, default=30)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    rows = []
    for b, t, d, h in CASES:
        for need_weights in (False, True):
            row = run_case(b, t, d, h, need_weights, args)
            rows.append(row)
            print(json.dumps(row), flush=True)
    summary = {
        "summary": "ours/torch (<1 = attnkit faster/smaller)",
        "device": args.device,
        "time_ratio": {f"{r['case']}_w{int(r['need_weights'])}": r["time_ratio"] for r in rows},
        "mem_ratio": {f"{r['case']}_w{int(r['need_weights'])}": r["mem_ratio"] for r in rows},
        "time_ratio_geomean": round(statistics.geometric_mean(r["time_ratio"] for r in rows), 3),
        "time_ratio_max": max(r["time_ratio"] for r in rows),
        "memory_method": "cuda max_memory_allocated" if args.device == "cuda" else "profiler allocator events",
    }
    print(json.dumps(summary), flush=True)


if __name__ == "__main__":
    main()
