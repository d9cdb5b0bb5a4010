"""A head mask at decoding time, for any model built on the core `Transformer` (`attnkit translate RUN
--mask-heads encoder:1.2,cross:3.1`; the parser, a `Transformer` subclass, decodes masked the same way).

The spec names heads as docs/analysis.md does, `kind:layer.head`, both 1-based, comma-separated;
kinds are `encoder`, `decoder_self` and `cross`. Each named head's output is multiplied by 0
(Michel et al. 2019), in the encoder pass and in every decoding step. The searches stay as they
are: `MaskedDecoding` is the model's decoding protocol (encode / init_state / step) with the mask
bound in, so greedy and beam search decode the masked model without knowing of masks. A model's
`step` takes the mask as `head_mask=` (`Transformer.step`, and a subclass's override passes it on).
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor, nn

from attnkit.errors import ConfigError
from attnkit.models.transformer import HeadMask, Transformer

KINDS = ("encoder", "decoder_self", "cross")


def parse_head_mask(spec: str, model: nn.Module) -> HeadMask | None:
    """`encoder:1.2,cross:3.1` -> a HeadMask of ones with those heads at 0; None for an empty spec.

    Raises:
        ConfigError: The model has no heads, or an entry has an unknown kind, a bad form, or a layer
            or head out of range (the message names the entry and the range).
    """
    entries = [part.strip() for part in spec.split(",") if part.strip()]
    if not entries:
        return None
    if not isinstance(model, Transformer):
        raise ConfigError(f"--mask-heads {spec}: only Transformer runs have attention heads to mask (this run's model is {type(model).__name__})")
    heads = model.decoder_layers[0].self_attn.n_heads
    layers = {"encoder": len(model.encoder_layers), "decoder_self": len(model.decoder_layers), "cross": len(model.decoder_layers)}
    device = next(model.parameters()).device
    gates = {kind: torch.ones(n, heads, device=device) for kind, n in layers.items()}  # (L, H) per kind
    for entry in entries:
        kind, layer, head = _parse_entry(entry, spec)
        if not 1 <= layer <= layers[kind]:
            raise ConfigError(f"--mask-heads {entry}: {kind} layer {layer} is out of range (1..{layers[kind]})")
        if not 1 <= head <= heads:
            raise ConfigError(f"--mask-heads {entry}: head {head} is out of range (1..{heads})")
        gates[kind][layer - 1, head - 1] = 0.0
    return HeadMask(gates["encoder"], gates["decoder_self"], gates["cross"])


def _parse_entry(entry: str, spec: str) -> tuple[str, int, int]:
    kind, _, where = entry.partition(":")
    if kind not in KINDS:
        raise ConfigError(f"--mask-heads {entry}: unknown kind {kind!r} (expected one of {', '.join(KINDS)}; form kind:layer.head, e.g. encoder:1.2)")
    layer, _, head = where.partition(".")
    if not (layer.isdigit() and head.isdigit()):
        raise ConfigError(f"--mask-heads {entry}: expected kind:layer.head with 1-based numbers, e.g. {kind}:1.2")
    return kind, int(layer), int(head)


class MaskedDecoding:
    """The model's decoding protocol (encode / init_state / step) with a fixed head mask, for the searches."""

    def __init__(self, model: Transformer, mask: HeadMask) -> None:
        self.model, self.mask = model, mask

    def encode(self, src: Tensor, src_keep: Tensor) -> Tensor:
        return self.model.encode(src, src_keep, head_mask=self.mask)  # (B, S, D)

    def init_state(self, memory: Tensor, src_keep: Tensor) -> Any:
        return self.model.init_state(memory, src_keep)

    def step(self, prev_tokens: Tensor, state: Any) -> tuple[Tensor, Any, Tensor]:
        return self.model.step(prev_tokens, state, head_mask=self.mask)  # (B, V), state, (B, S)


def masked(model: nn.Module, spec: str | None) -> Any:
    """The model to decode with: `model` itself without a spec (or an empty one), else `MaskedDecoding`."""
    mask = None if spec is None else parse_head_mask(spec, model)
    return model if mask is None else MaskedDecoding(model, mask)
