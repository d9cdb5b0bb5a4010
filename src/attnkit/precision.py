"""Device choice and mixed precision: bf16 autocast on CPU/CUDA, fp16 with a gradient scaler on CUDA;
dynamic int8 quantisation for CPU decoding.

`precision: auto` (the default) trains in bf16 only where the hardware has native bf16 arithmetic
(x86 CPUs with AVX512-BF16 or AMX, CUDA devices that support bf16) and in fp32 elsewhere: on a CPU
without bf16 units, bf16 is emulated and slower than fp32. One log line says which was chosen.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import warnings
from collections.abc import Mapping
from pathlib import Path

import torch
from torch import nn

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


# /proc/cpuinfo flags of int8 dot products that accumulate in 32 bits (VNNI). Without them oneDNN's int8 GEMM
# multiplies with vpmaddubsw, whose pairwise sums saturate at 16 bits (oneDNN's "Int8 Computation Aspects").
CPU_VNNI_FLAGS = ("avx512_vnni", "avx_vnni", "amx_int8")
# ONEDNN_MAX_CPU_ISA values that cap oneDNN below every VNNI instruction set (how a test imitates such a CPU).
ONEDNN_ISAS_WITHOUT_VNNI = ("SSE41", "AVX", "AVX2", "AVX512_CORE")
ONEDNN_ISAS_WITHOUT_BF16 = (*ONEDNN_ISAS_WITHOUT_VNNI, "AVX2_VNNI", "AVX2_VNNI_2", "AVX512_CORE_VNNI")


@functools.cache
def _cpuinfo(field: str) -> str:
    """The first value of `field` in /proc/cpuinfo ("" where there is none)."""
    try:
        text = Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""
    return next((line.split(":", 1)[1].strip() for line in text.splitlines() if line.split(":", 1)[0].strip() == field), "")


def cpu_flags() -> frozenset[str]:
    """The CPU's /proc/cpuinfo flags (empty where there is no /proc/cpuinfo)."""
    return frozenset(_cpuinfo("flags").split())


def cpu_model() -> str:
    """The CPU's model and vendor (/proc/cpuinfo), for `attnkit doctor` and benchmark records."""
    return f"{_cpuinfo('model name') or 'unknown CPU'} ({_cpuinfo('vendor_id') or 'unknown vendor'})"


def _onednn_cap(environ: Mapping[str, str]) -> str:
    """The instruction set oneDNN (and so PyTorch's CPU matmuls) is capped at ("" for none)."""
    return (environ.get("ONEDNN_MAX_CPU_ISA") or environ.get("DNNL_MAX_CPU_ISA") or "").upper()


def native_bf16(device: torch.device) -> tuple[bool, str]:
    """Whether `device` computes bf16 natively, and why (for logs and `attnkit doctor`)."""
    if device.type == "cuda":
        ok = torch.cuda.is_bf16_supported()
        return ok, f"{torch.cuda.get_device_name(device)} {'supports' if ok else 'does not support'} bf16"
    if not cpu_flags():
        return False, "CPU flags unknown (no /proc/cpuinfo)"
    cap = _onednn_cap(os.environ)
    if cap in ONEDNN_ISAS_WITHOUT_BF16:
        return False, f"ONEDNN_MAX_CPU_ISA={cap} leaves oneDNN no bf16 instructions"
    found = [flag for flag in CPU_BF16_FLAGS if flag in cpu_flags()]
    return bool(found), f"this CPU has {', '.join(found)}" if found else "this CPU has no AVX512-BF16 or AMX"


def int8_dot_products(environ: Mapping[str, str] = os.environ) -> tuple[bool, str]:
    """Whether oneDNN's int8 GEMMs may use VNNI here (the CPU has it and ONEDNN_MAX_CPU_ISA does not cap it
    away), and why: without VNNI their 16-bit intermediate sums saturate (docs/deployment.md, int8)."""
    cap = _onednn_cap(environ)
    if cap in ONEDNN_ISAS_WITHOUT_VNNI:
        return False, f"ONEDNN_MAX_CPU_ISA={cap} leaves oneDNN no VNNI"
    found = [flag for flag in CPU_VNNI_FLAGS if flag in cpu_flags()]
    return bool(found), f"this CPU has {', '.join(found)}" if found else "this CPU has no VNNI (AVX512-VNNI, AVX-VNNI or AMX)"


@functools.cache
def resolve(precision: str, device: torch.device) -> str:
    """`precision` with `auto` replaced by bf16 (native bf16 on `device`) or fp32; logged once."""
    if precision != "auto":
        return precision
    ok, why = native_bf16(device)
    chosen = "bf16" if ok else "fp32"
    log.info("precision auto: %s (%s)", chosen, why)
    return chosen


def compute_dtype(like: torch.Tensor) -> torch.dtype:
    """The dtype matmuls run in: autocast's when it is on for `like`'s device, else `like`'s own."""
    device = like.device.type
    return torch.get_autocast_dtype(device) if torch.is_autocast_enabled(device) else like.dtype


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


def quantize_int8(model: nn.Module) -> nn.Module:
    """Dynamic int8 quantisation of every `nn.Linear` of an fp32 model in eval mode, for CPU decoding.

    Weights are stored as int8 with one scale per output row (per-channel: 22.00 BLEU against 21.56
    with one scale per matrix and 21.87 in fp32, m30k beam 5, docs/deployment.md); each call quantises its input per batch
    and computes the matmul in int8 with int32 accumulation (fbgemm / oneDNN kernels), returning
    float32. Embeddings, layer norms and attention itself stay in float32.

    Only models that say they support it are quantised: their code must call their `nn.Linear`
    modules rather than read `.weight` (which int8 modules do not have), and they define
    `untie_output`, called first, which gives a tied output projection its own `nn.Linear` so that
    it is quantised too (the Transformer does; the RNN models read weights directly).

    PyTorch 2.13 still ships this as `torch.ao.quantization.quantize_dynamic` and marks it
    deprecated in favour of torchao (not a dependency of attnkit); its deprecation warnings are
    silenced here.

    Raises:
        ConfigError: the model does not support int8 decoding.
    """
    untie = getattr(model, "untie_output", None)
    if not callable(untie):
        raise ConfigError(f"int8 decoding is not supported for this model ({type(model).__name__}); use fp32 or bf16")
    untie()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        warnings.simplefilter("ignore", UserWarning)
        from torch.ao.quantization import per_channel_dynamic_qconfig, quantize_dynamic

        return quantize_dynamic(model.float().eval(), {nn.Linear: per_channel_dynamic_qconfig}, dtype=torch.qint8)
