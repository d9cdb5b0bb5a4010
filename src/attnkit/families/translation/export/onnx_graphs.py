"""attnkit's Transformer as two ONNX graphs: the encoder, and one decoder step with its key/value cache.

`encoder.onnx`: src (B, S) int64, src_keep (B, S) bool -> the cross-attention keys and values of
every decoder layer, `cross_k{i}`, `cross_v{i}` (B, H, S, E), computed once per sentence.

`decoder.onnx`: prev (R, 1) int64 (BOS first), src_keep (B, S), the self-attention cache
`past_k{i}`, `past_v{i}` (R, H, t, E) of the t earlier positions (t = 0 at the first step) and
the cross keys/values -> logits (R, V) and the cache extended to t + 1 positions, `present_k{i}`,
`present_v{i}` (R, H, t + 1, E). R = B * K rows,
K consecutive rows per sentence (K = 1 for greedy search), as in attnkit's own `step`: the K
beams of a sentence share its cross keys/values. The position of the new token is t.

Both graphs are attnkit's own `encode` / `init_state` / `step` code captured by PyTorch's
`torch.export`-based exporter (`torch.onnx.export(dynamo=True)`) with dynamic batch, source and
cache lengths, in float32. `onnx_runner` decodes with them on ONNX Runtime.
"""

from __future__ import annotations

import logging
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from torch import Tensor, nn

from attnkit.attention.cache import KVCache
from attnkit.errors import AttnkitError
from attnkit.families.translation.export.bundle import optional
from attnkit.models.transformer import Transformer, TransformerState

ENCODER, DECODER = "encoder.onnx", "decoder.onnx"


def cache_names(layers: int, side: str) -> list[str]:
    """`{side}_k0, {side}_v0, {side}_k1, ...`: the graph names of one kind of key/value cache."""
    return [f"{side}_{kv}{i}" for i in range(layers) for kv in "kv"]


class EncoderGraph(nn.Module):
    """src (B, S), src_keep (B, S) -> cross_k0, cross_v0, ... (B, H, S, E)."""

    def __init__(self, model: Transformer) -> None:
        super().__init__()
        self.model = model

    def forward(self, src: Tensor, src_keep: Tensor) -> tuple[Tensor, ...]:
        state = self.model.init_state(self.model.encode(src, src_keep), src_keep)
        return tuple(t for kv in state.cross_kv for t in (kv.k, kv.v))  # (B, H, S, E) each


class DecoderStepGraph(nn.Module):
    """prev (R, 1), src_keep (B, S), self caches (R, H, t, E), cross caches (B, H, S, E) -> logits (R, V), self caches (R, H, t+1, E)."""

    def __init__(self, model: Transformer) -> None:
        super().__init__()
        self.model = model

    def forward(self, prev: Tensor, src_keep: Tensor, *caches: Tensor) -> tuple[Tensor, ...]:
        n = len(self.model.decoder_layers)
        self_kv = [KVCache(caches[2 * i], caches[2 * i + 1]) for i in range(n)]
        cross_kv = [KVCache(caches[2 * (n + i)], caches[2 * (n + i) + 1]) for i in range(n)]
        state = TransformerState(self_kv, cross_kv, src_keep[:, None, None, :], position=self_kv[0].k.size(2))
        logits, state, _ = self.model.step(prev, state)  # (R, V)
        return (logits.float(), *(t for kv in state.self_kv for t in (kv.k, kv.v)))  # (R, V), (R, H, t+1, E) each


def _examples(model: Transformer) -> tuple[tuple[Tensor, ...], tuple[Tensor, ...]]:
    """Example inputs of the two graphs: 2 sentences of 5 pieces, 3 beams each, 2 cached positions."""
    batch, beams, length, past = 2, 3, 5, 2
    src = torch.full((batch, length), 4, dtype=torch.long)  # (B, S)
    keep = torch.ones(batch, length, dtype=torch.bool)  # (B, S)
    keep[1, -1] = False
    with torch.no_grad():
        cross = [t.contiguous() for t in EncoderGraph(model).eval()(src, keep)]  # as ONNX Runtime hands them over
    attn = model.decoder_layers[0].self_attn
    past_kv = [torch.zeros(batch * beams, attn.n_heads, past, attn.d_k) for _ in range(2 * len(model.decoder_layers))]  # (R, H, t, E)
    prev = torch.full((batch * beams, 1), 5, dtype=torch.long)  # (R, 1)
    return (src, keep), (prev, keep, *past_kv, *cross)


def _export(module: nn.Module, args: tuple[Tensor, ...], names: list[str], outputs: list[str], dims: tuple[Any, ...], path: Path) -> None:
    """Capture `module` with `torch.export` and write it as one self-contained ONNX file (weights inside)."""
    optional("onnx"), optional("onnxscript")
    quiet = [logging.getLogger(name) for name in ("onnxscript", "onnx_ir")]
    levels = [logger.level for logger in quiet]
    for logger in quiet:  # one INFO line per folded constant otherwise
        logger.setLevel(logging.WARNING)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)  # torch 2.13's own pytree deprecation, raised inside the exporter
            program = torch.onnx.export(module, args, input_names=names, output_names=outputs, dynamic_shapes=dims, dynamo=True,
                                        external_data=False, verbose=False)  # fmt: skip
    except Exception as e:  # the exporter's errors are many pages long; its first line says what failed
        raise AttnkitError(f"ONNX export of {path.name} failed: {str(e).splitlines()[0]}") from None
    finally:
        for logger, level in zip(quiet, levels):
            logger.setLevel(level)
    program.save(str(path))


def write(model: Any) -> Callable[[Path], dict[str, Any]]:
    """The engine writer for `bundle.write_bundle`: exports `model`'s two graphs into the folder it is given."""
    if not isinstance(model, Transformer):
        raise AttnkitError(f"ONNX export is not supported for this model ({type(model).__name__}): only Transformer runs")

    def into(folder: Path) -> dict[str, Any]:
        model.float().eval()
        n = len(model.decoder_layers)
        enc_args, dec_args = _examples(model)
        dyn = torch.export.Dim.DYNAMIC
        batch_src = {0: dyn, 1: dyn}
        with torch.no_grad():
            _export(EncoderGraph(model).eval(), enc_args, ["src", "src_keep"], cache_names(n, "cross"), (batch_src, batch_src), folder / ENCODER)
            dims = ({0: dyn}, batch_src, ({0: dyn, 2: dyn},) * (4 * n))  # *caches is one argument
            names = ["prev", "src_keep", *cache_names(n, "past"), *cache_names(n, "cross")]
            _export(DecoderStepGraph(model).eval(), dec_args, names, ["logits", *cache_names(n, "present")], dims, folder / DECODER)
        attn = model.decoder_layers[0].self_attn
        return {
            "onnx": optional("onnx").__version__,
            "torch": torch.__version__,
            "layers": n,
            "heads": attn.n_heads,
            "head_dim": attn.d_k,
            "value_dim": attn.d_v,
        }

    return into
