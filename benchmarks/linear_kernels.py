"""The GEMMs of a decoding step on three CPU kernels: MKL's sgemm, oneDNN's packed linear, MKL's packed sgemm.

    .venv/bin/python benchmarks/linear_kernels.py [--threads 1] [--rows 320 64 37 5] [--d-model 256 --d-ff 1024 --vocab 8000]

For each row count M (one row per beam of each live sentence) and each weight of an m30k-small
decoder step (the stacked Q/K/V, an output or cross-attention projection, the two FFN layers and the
vocabulary projection), it times `F.linear` (MKL's sgemm on an x86 build of PyTorch),
`torch.ops.mkldnn._linear_pointwise` on a weight packed by `_reorder_linear_weight` (what
`attnkit.attention.packed` uses) and `torch.ops.mkl._mkl_linear` on a weight packed by
`_mkl_reorder_linear_weight` (MKL's packed sgemm, which PyTorch only uses when M equals the
packing's batch size, 64 here, and otherwise falls back to `F.linear`). It prints one JSON line per
(M, weight): the median microseconds per call of each, over 5 rounds of 200 calls, and the GFLOP/s
of the fastest. Run it alone on the machine.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable

import torch
import torch.nn.functional as F

BATCH_HINT = 64  # as attnkit.attention.packed


def _microseconds(fn: Callable[[], object], calls: int = 200, rounds: int = 5) -> float:
    for _ in range(10):
        fn()
    times = []
    for _ in range(rounds):
        started = time.perf_counter()
        for _ in range(calls):
            fn()
        times.append((time.perf_counter() - started) / calls * 1e6)
    return statistics.median(times)


def _kernels(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> dict[str, float]:
    """Microseconds per call of each kernel for x (M, 1, Din) @ w (Dout, Din).T + b."""
    onednn = torch.ops.mkldnn._reorder_linear_weight(w, BATCH_HINT)
    mkl = torch.ops.mkl._mkl_reorder_linear_weight(w, BATCH_HINT)
    return {
        "f_linear_us": _microseconds(lambda: F.linear(x, w, b)),
        "onednn_packed_us": _microseconds(lambda: torch.ops.mkldnn._linear_pointwise(x, onednn, b, "none", [], "")),
        "mkl_packed_us": _microseconds(lambda: torch.ops.mkl._mkl_linear(x, mkl, w, b, BATCH_HINT)),
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--rows", type=int, nargs="+", default=[320, 64, 37, 5])
    p.add_argument("--d-model", type=int, default=256)
    p.add_argument("--d-ff", type=int, default=1024)
    p.add_argument("--vocab", type=int, default=8000)
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    d, f = args.d_model, args.d_ff
    weights = {"qkv": (3 * d, d), "out": (d, d), "ffn_1": (f, d), "ffn_2": (d, f), "vocabulary": (args.vocab, d)}
    for rows in args.rows:
        for name, (d_out, d_in) in weights.items():
            w, b, x = torch.randn(d_out, d_in), torch.randn(d_out), torch.randn(rows, 1, d_in)  # x (M, 1, Din)
            with torch.inference_mode():
                us = _kernels(x, w, b)
            gflops = 2 * rows * d_in * d_out / min(us.values()) / 1e3
            print(json.dumps({"benchmark": "linear_kernels", "rows": rows, "weight": name, "shape": [d_out, d_in], "threads": args.threads,
                              **{k: round(v, 1) for k, v in us.items()}, "fastest": min(us, key=us.get), "fastest_gflops": round(gflops, 1)}),
                  flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
