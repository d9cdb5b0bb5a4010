"""`attnkit doctor`: what this machine has that makes attnkit fast, which optional extras are installed,
and what each missing piece costs.

The costs are the figures measured in README.md and docs/training.md (2-core AMD EPYC, m30k-small).
"""

from __future__ import annotations

import argparse
import ctypes.util
import shutil


def checks() -> list[tuple[str, bool, str, str]]:
    """(what, present, detail, what its absence costs) for each piece."""
    import torch

    from attnkit.precision import native_bf16

    cpu_bf16, why = native_bf16(torch.device("cpu"))
    gpus = torch.cuda.device_count()
    jemalloc = ctypes.util.find_library("jemalloc")
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    return [
        ("torch", True, f"{torch.__version__}, {torch.get_num_threads()} threads", ""),
        ("bf16 on the CPU", cpu_bf16, why,
         "train.precision auto trains in fp32: m30k-small 2,347 instead of 3,900-4,177 target tokens/s"),
        ("jemalloc", jemalloc is not None, jemalloc or "libjemalloc not found",
         "training peaks at 2.04 instead of 1.44 GB (bf16) and page-faults; Debian: apt-get install libjemalloc2"),
        ("GPUs", gpus > 0, ", ".join(torch.cuda.get_device_name(i) for i in range(gpus)) or "none (CUDA not available)",
         "train on the CPU (m30k-small: 40 minutes for 35 BLEU on 2 cores)"),
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
        description="Print torch and its threads, bf16 support, jemalloc, GPUs, chromium and the optional extras (attnkit[serve], ...), "
        "and what each missing piece costs.",
    )
    p.set_defaults(func=cmd_doctor)
