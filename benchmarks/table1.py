"""Table 1 of "Attention Is All You Need", measured: time and memory of one layer against sequence length.

Three layers of the same width d, on a batch of B sequences of n vectors, forward and backward:
- self-attention: `attnkit.attention.MultiHeadAttention` (h heads; Q, K, V and output projections
  included, as in a Transformer layer), twice: with its attention weights computed explicitly (the
  paper's softmax(Q K^T / sqrt(d_k)) V, an (n x n) map per head), and "fused", weights not requested,
  so `F.scaled_dot_product_attention` runs, as in training (on CPU and CUDA a kernel that never
  stores the (n x n) map: the same O(n^2 d) time, memory linear in n). The paper: O(n^2 d) per
  layer, O(1) sequential operations;
- recurrent: one `nn.LSTM` layer, d -> d. The paper: O(n d^2), O(n) sequential operations;
- convolutional: one `nn.Conv1d`, d -> d channels, kernel k, same padding. The paper: O(k n d^2).

Per layer and length: the median wall time of `--reps` forward + backward passes after a warm-up,
the bytes of the tensors the forward pass saves for backward (`torch.autograd.graph.saved_tensors_hooks`,
each storage counted once: the activation memory training holds per layer, on any device), and on
CUDA the peak allocated memory above the inputs. The growth exponent in n is the least-squares slope
of log(time) (and log(memory)) against log(n) over the upper half of the lengths, where fixed costs
no longer dominate. The paper's counts are of the attention itself: a whole attention layer also
projects (O(n d^2)), so its time grows with an exponent between 1 (n << d) and 2 (n >> d).

Prints one JSON line per layer and writes `OUT.png` (time and memory against n, log-log) and `OUT.jsonl`.

    OMP_NUM_THREADS=2 .venv/bin/python benchmarks/table1.py --threads 2          # CPU, in a quiet window
    .venv/bin/python benchmarks/table1.py --device cuda --lengths 64,128,256,512,1024,2048,4096,8192
    .venv/bin/python benchmarks/table1.py --lengths 8,16,32 --d 32 --reps 1 --out /tmp/t1   # a smoke test
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import time
from collections.abc import Callable
from pathlib import Path

import torch
from torch import Tensor, nn

from attnkit.attention.multihead import MultiHeadAttention
from attnkit.viz.heatmap import pyplot

PAPER = {
    "self-attention": {"complexity": "O(n^2 d)", "sequential": "O(1)", "n_exponent": 2},
    "self-attention (fused)": {"complexity": "O(n^2 d)", "sequential": "O(1)", "n_exponent": 2},
    "recurrent": {"complexity": "O(n d^2)", "sequential": "O(n)", "n_exponent": 1},
    "convolutional": {"complexity": "O(k n d^2)", "sequential": "O(1)", "n_exponent": 1},
}


class SelfAttention(nn.Module):
    """`fused`: weights not requested, so `F.scaled_dot_product_attention` (as in training); else the
    explicit softmax(Q K^T / sqrt(d_k)) V of the paper, its (B, H, n, n) weights materialised."""

    def __init__(self, d: int, heads: int, fused: bool) -> None:
        super().__init__()
        self.attention, self.fused = MultiHeadAttention(d, heads), fused

    def forward(self, x: Tensor) -> Tensor:  # x: (B, n, D)
        return self.attention(x, x, x, need_weights=not self.fused)[0]  # (B, n, D)


class Recurrent(nn.Module):
    def __init__(self, d: int) -> None:
        super().__init__()
        self.lstm = nn.LSTM(d, d, batch_first=True)

    def forward(self, x: Tensor) -> Tensor:  # x: (B, n, D)
        return self.lstm(x)[0]  # (B, n, D)


class Convolutional(nn.Module):
    def __init__(self, d: int, kernel: int) -> None:
        super().__init__()
        self.conv = nn.Conv1d(d, d, kernel, padding=kernel // 2)

    def forward(self, x: Tensor) -> Tensor:  # x: (B, n, D)
        return self.conv(x.transpose(1, 2)).transpose(1, 2)  # (B, n, D)


def saved_bytes(layer: nn.Module, x: Tensor) -> int:
    """Bytes of the tensors the forward pass saves for backward, each storage once (parameters excluded)."""
    params = {p.untyped_storage().data_ptr() for p in layer.parameters()}
    seen: dict[int, int] = {}

    def pack(t: Tensor) -> Tensor:
        storage = t.untyped_storage()
        if storage.data_ptr() not in params:
            seen[storage.data_ptr()] = storage.nbytes()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        layer(x).sum().backward()
    return sum(seen.values())


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def measure(layer: nn.Module, x: Tensor, reps: int) -> dict[str, float | int | None]:
    """Median seconds of forward + backward, saved bytes, and (CUDA) peak bytes above the input."""
    step: Callable[[], None] = lambda: layer(x).sum().backward()  # noqa: E731
    step()  # warm-up (kernels chosen, memory pools filled)
    times = []
    for _ in range(reps):
        _sync(x.device)
        started = time.perf_counter()
        step()
        _sync(x.device)
        times.append(time.perf_counter() - started)
    peak = None
    if x.device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(x.device)
        base = torch.cuda.memory_allocated(x.device)
        step()
        _sync(x.device)
        peak = torch.cuda.max_memory_allocated(x.device) - base
    layer.zero_grad(set_to_none=True)
    return {"seconds": statistics.median(times), "saved_bytes": saved_bytes(layer, x), "peak_bytes": peak}


def slope(lengths: list[int], values: list[float]) -> float:
    """Least-squares slope of log(values) against log(lengths): the growth exponent in n."""
    xs, ys = [math.log(n) for n in lengths], [math.log(v) for v in values]
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)


def run_layer(name: str, layer: nn.Module, args: argparse.Namespace, device: torch.device) -> dict:
    """Every length for one layer, and the exponents fitted over the upper half of the lengths."""
    layer = layer.to(device)
    points = []
    for n in args.lengths:
        x = torch.randn(args.batch, n, args.d, device=device, requires_grad=True)  # (B, n, D)
        points.append({"n": n, **measure(layer, x, args.reps)})
    upper = points[len(points) // 2 :] if len(points) >= 4 else points
    fit = [p["n"] for p in upper]
    exponents = {"time": slope(fit, [p["seconds"] for p in upper]), "saved_memory": slope(fit, [p["saved_bytes"] for p in upper])}
    if device.type == "cuda":
        exponents["peak_memory"] = slope(fit, [max(p["peak_bytes"], 1) for p in upper])
    return {"layer": name, "paper": PAPER[name], "fitted_n_exponent": {k: round(v, 3) for k, v in exponents.items()}, "fitted_over": fit,
            "d": args.d, "batch": args.batch, "heads": args.heads, "kernel": args.kernel, "device": str(device), "threads": torch.get_num_threads(),
            "dtype": "float32", "points": points}  # fmt: skip


def plot(results: list[dict], path: Path) -> None:
    """Time and saved memory against n, log-log, one line per layer, with the paper's growth beside the legend."""
    plt = pyplot()
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4))
    for r in results:
        ns = [p["n"] for p in r["points"]]
        label = f"{r['layer']} {r['paper']['complexity']}: n^{r['fitted_n_exponent']['time']:.2f}"
        left.loglog(ns, [p["seconds"] * 1e3 for p in r["points"]], "o-", label=label)
        right.loglog(ns, [p["saved_bytes"] / 2**20 for p in r["points"]], "o-", label=f"{r['layer']}: n^{r['fitted_n_exponent']['saved_memory']:.2f}")
    r = results[0]
    left.set(xlabel="sequence length n", ylabel="forward + backward (ms)", title=f"time per layer (d={r['d']}, B={r['batch']}, {r['device']})")
    right.set(xlabel="sequence length n", ylabel="saved for backward (MiB)", title="activation memory per layer")
    for ax in (left, right):
        ax.legend(fontsize=7)
        ax.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--d", type=int, default=512, help="width of every layer (the paper's base d_model)")
    p.add_argument("--heads", type=int, default=8)
    p.add_argument("--kernel", type=int, default=3, help="convolution kernel width k")
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--lengths", default="16,32,64,128,256,512,1024,2048", help="comma-separated sequence lengths")
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--device", default="cpu")
    p.add_argument("--threads", type=int, default=None)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--out", default="benchmarks/results/table1", help="writes OUT.png and OUT.jsonl")
    args = p.parse_args()
    args.lengths = [int(n) for n in args.lengths.split(",")]
    if args.threads:
        torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    device = torch.device(args.device)
    layers = {
        "self-attention": SelfAttention(args.d, args.heads, fused=False),
        "self-attention (fused)": SelfAttention(args.d, args.heads, fused=True),
        "recurrent": Recurrent(args.d),
        "convolutional": Convolutional(args.d, args.kernel),
    }
    results = [run_layer(name, layer, args, device) for name, layer in layers.items()]
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    lines = [json.dumps(r) for r in results]
    out.with_suffix(".jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    plot(results, out.with_suffix(".png"))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
