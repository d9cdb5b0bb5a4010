"""Device choice and mixed precision: bf16 autocast on CPU/CUDA, fp16 with a gradient scaler on CUDA."""

from __future__ import annotations

import contextlib

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


def autocast(device: torch.device, precision: str) -> contextlib.AbstractContextManager:
    """The forward-pass context for `precision` (fp32: no autocast)."""
    if precision == "fp32":
        return contextlib.nullcontext()
    if precision == "fp16" and device.type != "cuda":
        raise ConfigError("train.precision: fp16 needs CUDA; use bf16 on CPU")
    dtype = torch.bfloat16 if precision == "bf16" else torch.float16
    return torch.autocast(device_type=device.type, dtype=dtype)


def grad_scaler(device: torch.device, precision: str) -> torch.amp.GradScaler:
    """A loss scaler, enabled only for fp16 (bf16 has fp32's exponent range and needs none)."""
    return torch.amp.GradScaler(device.type, enabled=precision == "fp16")
