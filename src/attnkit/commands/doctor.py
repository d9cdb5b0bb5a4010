"""`attnkit doctor`: what this machine has that makes attnkit fast, which optional extras are installed,
and what each missing piece costs.

The costs are the figures measured in README.md and docs/training.md (2-core AMD EPYC, m30k-small).
"""

from __future__ import annotations

import argparse
import ctypes.util
import shutil

from attnkit.config.args import example


def checks() -> list[tuple[str, bool, str, str]]:
    """(what, present, detail, what its absence costs) for each piece."""
    import torch

    from attnkit.openmp import wait_policy
    from attnkit.precision import cpu_flags, cpu_model, int8_dot_products, native_bf16

    cpu_bf16, why = native_bf16(torch.device("cpu"))
    vnni, vnni_why = int8_dot_products()
    isa = [flag for flag in ("avx2", "avx512f", "avx512_vnni", "avx_vnni", "avx512_bf16", "amx_bf16", "amx_int8") if flag in cpu_flags()]
    gpus = torch.cuda.device_count()
    jemalloc = ctypes.util.find_library("jemalloc")
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    return [
        ("CPU", True, f"{cpu_model()}: {' '.join(isa) or 'no AVX2'}", ""),
        ("torch", True, f"{torch.__version__}, {torch.get_num_threads()} threads", ""),
        ("OpenMP waiting threads", True, wait_policy(), ""),
        ("bf16 on the CPU", cpu_bf16, why,
         "train.precision auto trains in fp32, slower than bf16 on a CPU with bf16 units (docs/benchmarks.md)"),
        ("int8 dot products (VNNI)", vnni, vnni_why,
         "oneDNN's int8 sums saturate in 16 bits: attnkit runs CTranslate2 on MKL instead (what int8 costs in BLEU on each "
         "setting: docs/deployment.md, int8 on every CPU); attnkit's own int8 (fbgemm, reduce_range) is unaffected"),
        ("jemalloc", jemalloc is not None, jemalloc or "libjemalloc not found",
         "training takes more memory and page-faults (docs/training.md, Memory); Debian: apt-get install libjemalloc2"),
        ("GPUs", gpus > 0, ", ".join(torch.cuda.get_device_name(i) for i in range(gpus)) or "none (CUDA not available)",
         "train on the CPU (the m30k-small preset is sized for 40 minutes on 2 cores; its BLEU: docs/benchmarks.md)"),
        ("chromium", chromium is not None, chromium or "not found",
         "the web UI's browser test is skipped; Debian: apt-get install chromium"),
        *extra_checks(),
    ]  # fmt: skip


def extra_checks() -> list[tuple[str, bool, str, str]]:
    """One row per optional extra (`attnkit.extras`): its packages, which are missing, and how to install them."""
    from attnkit.extras import report

    return [(f"attnkit[{extra.name}]", not lacking, ", ".join(extra.modules) + (f" (missing: {', '.join(lacking)})" if lacking else ""),
             f"no {extra.purpose}; {extra.install}") for extra, lacking in report()]  # fmt: skip


def cmd_doctor(args: argparse.Namespace) -> int:
    for what, ok, detail, cost in checks():
        print(f"{'ok ' if ok else 'no '} {what}: {detail}" + ("" if ok or not cost else f"\n      without it: {cost}"))
    return 0


def add(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "doctor",
        help="what this machine has that makes attnkit fast, and which optional extras are installed",
        description="Print the CPU and its instruction sets, torch and its threads, how idle threads wait, bf16 and int8 support, jemalloc, GPUs, chromium and "
        "the optional extras (attnkit[serve], ...), and what each missing piece costs.",
        epilog=example("attnkit doctor"),
    )
    p.set_defaults(func=cmd_doctor)
