"""Device choice and mixed precision: bf16 autocast on CPU/CUDA, fp16 with a gradient scaler on CUDA.

`precision: auto` (the default) trains in bf16 only where the hardware has native bf16 arithmetic
(x86 CPUs with AVX512-BF16 or AMX, CUDA devices that support bf16) and in fp32 elsewhere: on a CPU
without bf16 units, bf16 is emulated and slower than fp32. One log line says which was chosen.
"""

from __future__ import annotations

import contextlib
import functools
import logging
from pathlib import Path

import torch

from attnkit.errors import ConfigError


def pick_device(name: str) -> torch.device:
    """`auto` is CUDA when present, else CPU; asking for CUDA without one is an error."""
    if name == "auto":
        name = "cuda" if torch.cuda.is_available() else "cpu"
    if name == "cuda" and not torch.cuda.is_available():
        raise ConfigError("train.device: cuda requested but no CUDA device is available")
    if name == "cuda":
        # cuDNN attention builds a new plan for every new (B, T, S) shape, and token batches have
        # many: 19 ms per call on an H200 under bf16 (torch 2.11), 15x slower training than the
        # flash/memory-efficient kernels that SDPA then picks.
        torch.backends.cuda.enable_cudnn_sdp(False)
    return torch.device(name)


log = logging.getLogger("attnkit")
CPU_BF16_FLAGS = ("avx512_bf16", "amx_bf16")  # /proc/cpuinfo flags of native bf16 matrix arithmetic


def native_bf16(device: torch.device) -> tuple[bool, str]:
    """Whether `device` computes bf16 natively, and why (for logs and `attnkit doctor`)."""
    if device.type == "cuda":
        ok = torch.cuda.is_bf16_supported()
        return ok, f"{torch.cuda.get_device_name(device)} {'supports' if ok else 'does not support'} bf16"
    try:
        words = set(Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace").split())
    except OSError:
        return False, "CPU flags unknown (no /proc/cpuinfo)"
    found = [flag for flag in CPU_BF16_FLAGS if flag in words]
    return bool(found), f"this CPU has {', '.join(found)}" if found else "this CPU has no AVX512-BF16 or AMX"


@functools.cache
def resolve(precision: str, device: torch.device) -> str:
    """`precision` with `auto` replaced by bf16 (native bf16 on `device`) or fp32; logged once."""
    if precision != "auto":
        return precision
    ok, why = native_bf16(device)
    chosen = "bf16" if ok else "fp32"
    log.info("precision auto: %s (%s)", chosen, why)
    return chosen


def autocast(device: torch.device, precision: str) -> contextlib.AbstractContextManager:
    """The forward-pass context for `precision` (fp32: no autocast; auto: `resolve`)."""
    precision = resolve(precision, device)
    if precision == "fp32":
        return contextlib.nullcontext()
    if precision == "fp16" and device.type != "cuda":
        raise ConfigError("train.precision: fp16 needs CUDA; use bf16 on CPU")
    dtype = torch.bfloat16 if precision == "bf16" else torch.float16
    return torch.autocast(device_type=device.type, dtype=dtype)


def grad_scaler(device: torch.device, precision: str) -> torch.amp.GradScaler:
    """A loss scaler, enabled only for fp16 (bf16 has fp32's exponent range and needs none)."""
    return torch.amp.GradScaler(device.type, enabled=resolve(precision, device) == "fp16")
