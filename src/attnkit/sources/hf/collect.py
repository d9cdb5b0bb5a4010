"""Attention of a transformers model, layer by layer, through forward hooks.

transformers (v5) itself records `output_attentions` with forward hooks: each model class names
the modules whose output holds the weights in `_can_record_outputs` (`attentions`,
`cross_attentions`: a class, or an `OutputRecorder` with the tuple index and a layer name). With
eager attention those modules compute and return the weights whether or not they are asked for;
the layer above drops them. `attention_modules` finds the same modules the same way (each
sub-model by its own table), and `collecting` hooks them so that each layer's (H, Tq, Tk) weights
go to a sink the moment the layer has run, and nothing keeps them after. Peak memory is then one
layer's weights, not all of them (benchmarks/attention_memory.py; docs/explorer.md).

Kinds: `cross` for cross attention; for self-attention `encoder` (encoder-only and vision models,
and the encoder of an encoder-decoder model), `decoder_self` (its decoder), `self` (decoder-only).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from torch import Tensor, nn

from attnkit.errors import AttnkitError

Sink = Callable[[str, Tensor], None]  # (kind, weights (H, Tq, Tk) of the next layer of that kind)


@dataclass(frozen=True)
class Site:
    """One attention module to hook: which key transformers records it under, and where its weights are."""

    key: str  # "attentions" or "cross_attentions"
    module: nn.Module
    index: int  # the weights' index in the module's output tuple
    name: str  # its dotted path in the model


def _specs(model: nn.Module) -> list[tuple[str, Any]]:
    """A (sub-)model's `_can_record_outputs` attention entries as (key, OutputRecorder)."""
    from transformers.utils.output_capturing import OutputRecorder

    out = []
    for key, specs in (getattr(model, "_can_record_outputs", None) or {}).items():
        if key not in ("attentions", "cross_attentions"):
            continue
        for spec in specs if isinstance(specs, list) else [specs]:
            if not isinstance(spec, OutputRecorder):
                name = spec if isinstance(spec, str) else None
                spec = OutputRecorder(target_class=None if name else spec, index=1, class_name=name)
            out.append((key, spec))
    return out


def _matches(spec: Any, module: nn.Module, name: str) -> bool:
    """transformers' rule: the class (or a name suffix), then the layer name if the spec has one."""
    hit = (spec.target_class is not None and isinstance(module, spec.target_class)) or (spec.class_name is not None and name.endswith(spec.class_name))
    return hit and (spec.layer_name is None or f".{spec.layer_name.strip('.')}." in f"{name}.")


def attention_modules(model: nn.Module) -> list[Site]:
    """Every attention module whose weights `output_attentions` would return, in module order."""
    from transformers import PreTrainedModel

    sites: list[Site] = []

    def walk(module: nn.Module, name: str, specs: list[tuple[str, Any]]) -> None:
        for child_name, child in module.named_children():
            child_specs = _specs(child) if isinstance(child, PreTrainedModel) else specs
            walk(child, f"{name}.{child_name}", child_specs)
        for key, spec in specs:
            if _matches(spec, module, name):
                sites.append(Site(key, module, spec.index, name.lstrip(".")))
                break

    walk(model, "", _specs(model))
    return sites


def kind_of(site: Site, arch: str, encoder_modules: set[int]) -> str:
    """The npz kind of a site: cross, encoder, decoder_self or self."""
    if site.key == "cross_attentions":
        return "cross"
    if arch == "encoder-decoder":
        return "encoder" if id(site.module) in encoder_modules else "decoder_self"
    return "self" if arch == "decoder" else "encoder"


@contextmanager
def collecting(model: nn.Module, arch: str, sink: Sink) -> Iterator[dict[str, int]]:
    """Hook every attention module of `model` so that each forward call hands (kind, (H, Tq, Tk)) to `sink`.

    Batch size 1: the sink gets the weights of the one input. Yields the kinds' layer counts of
    the calls so far. The hooks are removed when the block ends.
    """
    sites = attention_modules(model)
    if not sites:
        raise AttnkitError(f"{type(model).__name__}: no attention layers that transformers records (output_attentions)")
    encoder = model.get_encoder() if arch == "encoder-decoder" else None
    encoder_modules = {id(m) for m in encoder.modules()} if encoder is not None else set()
    counts: dict[str, int] = {}

    def hook_for(site: Site, kind: str):
        def hook(module: nn.Module, args: Any, output: Any) -> None:
            weights = output[site.index] if isinstance(output, tuple) else None
            if weights is None:
                raise AttnkitError(f"{site.name}: the attention module returned no weights (is attention eager?)")
            counts[kind] = counts.get(kind, 0) + 1
            sink(kind, weights[0])  # (H, Tq, Tk)

        return hook

    handles = [site.module.register_forward_hook(hook_for(site, kind_of(site, arch, encoder_modules))) for site in sites]
    try:
        yield counts
    finally:
        for handle in handles:
            handle.remove()
