"""Weights packed once for oneDNN's CPU GEMMs, for decoding.

A decoding step multiplies a few rows (one per beam) by every weight matrix of the decoder.
``F.linear`` reads each matrix in its stored (out, in) layout at every call; oneDNN's linear
(``torch.ops.mkldnn._linear_pointwise``) takes a weight reordered once into the blocked layout its
kernels read (``_reorder_linear_weight``), and can apply a ReLU on the way out. ``pack_linears``
turns a model's linear layers into ``PackedLinear`` (the same parameters and state dict, its class
swapped), its LSTM cells into ``PackedLSTMCell`` (one packed GEMM of [x ; h] a step), and gives a
cache to every module that declares ``packed_cache = None`` for the weights it multiplies itself
(stacked Q/K/V projections, a tied output projection).

The packed copy is made on first use and kept in the module's cache (``kept``), keyed on the
source tensors' storage address and version counter: a weight changed in place (``load_state_dict``,
an optimiser step) or replaced is packed again, and the entry holds the source tensor so that its
address cannot be reused by another. Inference tensors have no version counter: an in-place change
made to one under ``torch.inference_mode`` is not seen.

The packed path runs only where it computes what ``F.linear`` computes: on the CPU, in float32 (or
bfloat16 where oneDNN has bf16 kernels), without autograd, autocast, tracing or ``torch.compile``;
anywhere else these functions are ``F.linear``. Results equal ``F.linear``'s to float32 rounding
(the GEMMs sum in another order), not bit for bit.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import torch
import torch.nn.functional as F
from torch import Tensor, nn

# The number of rows oneDNN picks the packed layout for: a decoding step has one row per beam of
# each sentence in the batch (64 sentences by default).
BATCH_HINT = 64

T = TypeVar("T")


class PackedCache(dict):
    """Packed weights of one module by name (`kept`).

    A copy or a pickle of the module starts with an empty cache: oneDNN's packed tensors have no
    storage that `copy.deepcopy` or `torch.save` could copy, and they are rebuilt on first use.
    """

    def __deepcopy__(self, memo: dict) -> PackedCache:
        return PackedCache()

    def __reduce__(self) -> tuple[type, tuple]:
        return PackedCache, ()


@dataclass(frozen=True)
class _Entry:
    stamp: tuple[tuple[int, int], ...]
    sources: tuple[Tensor, ...]  # held, so that no other tensor gets their storage address
    value: Any


def _stamp(t: Tensor) -> tuple[int, int]:
    """What identifies a tensor's current contents: its storage address and version (-1 for inference tensors)."""
    return t.data_ptr(), -1 if t.is_inference() else t._version


def kept(cache: dict, name: str, sources: tuple[Tensor | None, ...], make: Callable[[], T]) -> T:
    """`make()`, computed once for the current contents of `sources` and kept in `cache[name]`.

    Args:
        cache: a module's `packed_cache`.
        name: what `make` builds (one entry per name).
        sources: the tensors `make` reads (None entries are skipped).
        make: builds the value from `sources`.

    Returns:
        The kept value, rebuilt when a source tensor was replaced or changed in place.
    """
    held = tuple(t for t in sources if t is not None)
    stamp = tuple(_stamp(t) for t in held)
    entry = cache.get(name)
    if entry is None or entry.stamp != stamp:
        entry = _Entry(stamp, held, make())
        cache[name] = entry
    return entry.value


def _bf16_kernels() -> bool:
    """Whether oneDNN has bf16 GEMM kernels on this CPU (PyTorch's own test for its bf16 matmuls)."""
    return torch.ops.mkldnn._is_mkldnn_bf16_supported()


def packable(x: Tensor, weight: Tensor) -> bool:
    """Whether `x @ weight.T` may go through oneDNN with a packed weight (module docstring)."""
    if x.device.type != "cpu" or weight.device.type != "cpu" or x.dtype != weight.dtype or x.numel() == 0:
        return False
    if x.dtype != torch.float32 and not (x.dtype == torch.bfloat16 and _bf16_kernels()):
        return False
    if torch.is_grad_enabled() or torch.is_autocast_enabled("cpu"):
        return False
    return not (torch.compiler.is_compiling() or torch.jit.is_tracing())


def linear(x: Tensor, weight: Tensor, bias: Tensor | None, cache: dict | None, name: str, relu: bool = False) -> Tensor:
    """`F.linear(x, weight, bias)` (then ReLU if `relu`), with `weight` packed once into `cache`.

    Args:
        x: (..., Din).
        weight: (Dout, Din).
        bias: (Dout,) or None.
        cache: a `PackedCache` (None: never pack).
        name: the weight's name in `cache`.
        relu: apply max(0, .) to the result (fused into the GEMM when packed).

    Returns:
        (..., Dout).
    """
    if cache is not None and packable(x, weight):
        packed = kept(cache, name, (weight,), lambda: torch.ops.mkldnn._reorder_linear_weight(weight, BATCH_HINT))
        return torch.ops.mkldnn._linear_pointwise(x, packed, bias, "relu" if relu else "none", [], "")  # (..., Dout)
    y = F.linear(x, weight, bias)  # (..., Dout)
    return F.relu(y) if relu else y


class PackedLinear(nn.Linear):
    """`nn.Linear` whose CPU inference goes through `linear` (made by `pack_linears`, not constructed)."""

    packed_cache: PackedCache

    def forward(self, x: Tensor) -> Tensor:
        return linear(x, self.weight, self.bias, self.packed_cache, "weight")  # (..., Dout)


class PackedLSTMCell(nn.LSTMCell):
    """`nn.LSTMCell` whose CPU inference is one GEMM of [x ; h] by the packed [W_ih | W_hh] (made by
    `pack_linears`, not constructed): the gates i, f, g, o (PyTorch's order) of
    ``W_ih x + b_ih + W_hh h + b_hh``, then ``c' = sigma(f) c + sigma(i) tanh(g)``, ``h' = sigma(o) tanh(c')``."""

    packed_cache: PackedCache

    def forward(self, x: Tensor, hx: tuple[Tensor, Tensor] | None = None) -> tuple[Tensor, Tensor]:
        if hx is None or x.dim() != 2 or self.bias_ih is None or not packable(x, self.weight_ih):
            return super().forward(x, hx)
        h, c = hx  # (B, H) each
        sources = (self.weight_ih, self.weight_hh, self.bias_ih, self.bias_hh)
        weight, bias = kept(self.packed_cache, "stacked", sources, lambda: (torch.cat([self.weight_ih, self.weight_hh], 1), self.bias_ih + self.bias_hh))
        gates = linear(torch.cat([x, h], dim=-1), weight, bias, self.packed_cache, "stacked.packed")  # (B, 4H)
        i, f, g, o = gates.chunk(4, dim=-1)  # (B, H) each
        c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)  # (B, H)
        return torch.sigmoid(o) * torch.tanh(c), c  # (B, H) each


def pack_linears(model: nn.Module) -> nn.Module:
    """Pack `model` for CPU inference, in place (module docstring); returns it.

    Every plain `nn.Linear` becomes a `PackedLinear` and every plain `nn.LSTMCell` a
    `PackedLSTMCell` (quantised and other subclasses are left as they are), and every module whose
    class declares `packed_cache = None` gets a cache. The parameters and the state dict do not change.
    """
    swaps = {nn.Linear: PackedLinear, nn.LSTMCell: PackedLSTMCell}
    for module in model.modules():
        if type(module) in swaps:
            module.__class__ = swaps[type(module)]
            module.packed_cache = PackedCache()
        elif hasattr(type(module), "packed_cache"):
            module.packed_cache = PackedCache()
    return model
