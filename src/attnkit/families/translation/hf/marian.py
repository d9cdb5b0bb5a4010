"""attnkit's Transformer <-> Hugging Face's MarianMTModel: the same network, weight for weight.

Both are post-norm encoder-decoders with biased q/k/v/out projections, LayerNorm (eps 1e-5),
embeddings scaled by sqrt(d_model) and sinusoidal positions counted from 0. What differs:

| attnkit | Marian |
|---|---|
| positions: sin and cos interleaved (column 2i sin, 2i+1 cos) | first half sin, second half cos |
| `res_attn` / `res_self`, `res_cross`, `res_ffn` norms | `self_attn_layer_norm`, `encoder_attn_layer_norm`, `final_layer_norm` |
| `ffn.w_1`, `ffn.w_2`, `cross_attn` | `fc1`, `fc2`, `encoder_attn` |
| `activation: relu / swish / gelu` | `activation_function: relu / swish (silu) / gelu` |
| `output_bias` (`final_logits_bias`) | `final_logits_bias` |

The position layouts are the same table with its columns permuted (`PERM`), so the exact
equivalent of one model is the other with every weight written in the permuted basis of the
residual stream: x_marian = x_attnkit[perm]. Projections that read the residual stream (q, k, v,
fc1) permute their input columns, those that write it (out_proj, fc2) their output rows, and the
LayerNorms, embeddings and residual biases their entries. LayerNorm and attention do not care in
which order the model's D features come, so the two compute the same logits.

Marian does not express pre-norm stacks (it has no final LayerNorm per stack), learned positions,
d_k or d_v other than d_model / heads, or unscaled embeddings: `check_exportable` names which.
"""

from __future__ import annotations

from collections.abc import Iterator

import torch
from torch import Tensor

from attnkit.attention.positional import LearnedPositionalEmbedding
from attnkit.errors import AttnkitError
from attnkit.models.transformer import Transformer

ACTIVATIONS = {"relu": "relu", "swish": "swish", "silu": "swish", "gelu": "gelu"}  # Marian's name -> attnkit's

# (attnkit suffix, Marian suffix, how the residual basis enters: "in" columns, "out" rows, "vec" entries, "" not at all)
_ATTENTION = [(f"{p}_proj.weight", f"{p}_proj.weight", "in") for p in "qkv"] + [(f"{p}_proj.bias", f"{p}_proj.bias", "") for p in "qkv"]
_ATTENTION += [("out_proj.weight", "out_proj.weight", "out"), ("out_proj.bias", "out_proj.bias", "vec")]
_FFN = [("ffn.w_1.weight", "fc1.weight", "in"), ("ffn.w_1.bias", "fc1.bias", ""), ("ffn.w_2.weight", "fc2.weight", "out"), ("ffn.w_2.bias", "fc2.bias", "vec")]


def _norm(ours: str, theirs: str) -> list[tuple[str, str, str]]:
    return [(f"{ours}.norm.{p}", f"{theirs}.{p}", "vec") for p in ("weight", "bias")]


ENCODER_LAYER = [(f"self_attn.{a}", f"self_attn.{m}", k) for a, m, k in _ATTENTION] + _norm("res_attn", "self_attn_layer_norm")
ENCODER_LAYER += _FFN + _norm("res_ffn", "final_layer_norm")
DECODER_LAYER = [(f"self_attn.{a}", f"self_attn.{m}", k) for a, m, k in _ATTENTION] + _norm("res_self", "self_attn_layer_norm")
DECODER_LAYER += [(f"cross_attn.{a}", f"encoder_attn.{m}", k) for a, m, k in _ATTENTION] + _norm("res_cross", "encoder_attn_layer_norm")
DECODER_LAYER += _FFN + _norm("res_ffn", "final_layer_norm")


def position_perm(d_model: int) -> Tensor:
    """The column order that turns attnkit's position table into Marian's: the even columns (sin), then the odd (cos)."""
    return torch.cat([torch.arange(0, d_model, 2), torch.arange(1, d_model, 2)])  # (D,)


def _permute(t: Tensor, how: str, index: Tensor) -> Tensor:
    if how == "in":
        return t[:, index]
    if how in ("out", "vec"):
        return t[index]
    return t


def layer_names(encoder_layers: int, decoder_layers: int) -> Iterator[tuple[str, str, str]]:
    """(attnkit name, Marian name, kind) of every layer weight."""
    for i in range(encoder_layers):
        yield from ((f"encoder_layers.{i}.{a}", f"model.encoder.layers.{i}.{m}", k) for a, m, k in ENCODER_LAYER)
    for i in range(decoder_layers):
        yield from ((f"decoder_layers.{i}.{a}", f"model.decoder.layers.{i}.{m}", k) for a, m, k in DECODER_LAYER)


def check_exportable(model: object) -> Transformer:
    """The model, if a MarianMTModel computes exactly the same function; else one error line naming what differs."""
    if not isinstance(model, Transformer):
        raise AttnkitError(f"Hugging Face export is not supported for this model ({type(model).__name__}): only Transformer runs")
    attn = model.decoder_layers[0].self_attn
    if model.decoder_layers[0].res_self.pre_norm:
        raise AttnkitError("Hugging Face export: Marian has no pre-norm stacks (norm: pre); only post-norm Transformer runs export")
    if isinstance(model.positions, LearnedPositionalEmbedding):
        raise AttnkitError("Hugging Face export: Marian has only sinusoidal positions, not learned ones (positions: learned)")
    if attn.d_k != attn.d_v or attn.d_k * attn.n_heads != model.d_model:
        raise AttnkitError(f"Hugging Face export: Marian needs d_k = d_v = d_model / n_heads, not d_k {attn.d_k}, d_v {attn.d_v}")
    if model.encoder_layers[0].ffn.w_1.out_features != model.decoder_layers[0].ffn.w_1.out_features:
        raise AttnkitError("Hugging Face export: Marian needs one d_ff for the encoder and the decoder")
    return model


def to_marian(model: Transformer) -> dict[str, Tensor]:
    """The MarianMTModel state dict of `model` (ids unchanged; shared and tied weights under each name)."""
    sd = model.state_dict()
    perm = position_perm(model.d_model)
    out = {m: _permute(sd[a], k, perm).contiguous() for a, m, k in layer_names(len(model.encoder_layers), len(model.decoder_layers))}
    src, tgt = sd["src_embed.weight"][:, perm], sd["tgt_embed.weight"][:, perm]  # (V, D)
    out |= {"model.shared.weight": src, "model.encoder.embed_tokens.weight": src, "model.decoder.embed_tokens.weight": tgt}
    out["lm_head.weight"] = model.output_weight.detach()[:, perm]  # (V, D)
    bias = model.final_logits_bias
    out["final_logits_bias"] = (torch.zeros(tgt.size(0)) if bias is None else bias.detach().float())[None]  # (1, V)
    return {name: t.detach().float().contiguous() for name, t in out.items()}


def from_marian(weights: dict[str, Tensor], encoder_layers: int, decoder_layers: int, src_rows: Tensor, tgt_rows: Tensor) -> dict[str, Tensor]:
    """attnkit's state dict from Marian's `weights`; row i of attnkit's source (target) vocabulary is Marian's `src_rows[i]` (`tgt_rows[i]`).

    The tied and shared names Marian may leave out of its file (`model.shared.weight` only, no
    `lm_head.weight`) are looked up in order; a missing `final_logits_bias` is zeros.
    """
    d_model = weights[first(weights, "model.encoder.embed_tokens.weight", "model.shared.weight")].size(1)
    inv = torch.argsort(position_perm(d_model))
    out = {a: _permute(weights[m], k, inv) for a, m, k in layer_names(encoder_layers, decoder_layers)}
    src = weights[first(weights, "model.encoder.embed_tokens.weight", "model.shared.weight")]
    tgt = weights[first(weights, "model.decoder.embed_tokens.weight", "model.shared.weight")]
    out["src_embed.weight"], out["tgt_embed.weight"] = src[src_rows][:, inv], tgt[tgt_rows][:, inv]  # (V', D)
    if "lm_head.weight" in weights:
        out["output.weight"] = weights["lm_head.weight"][tgt_rows][:, inv]  # (V', D)
    bias = weights.get("final_logits_bias", torch.zeros(1, tgt.size(0)))[0]  # (V,)
    out["final_logits_bias"] = bias[tgt_rows]  # (V',)
    return {name: t.float().contiguous() for name, t in out.items()}


def first(weights: dict[str, Tensor], *names: str) -> str:
    """The first of `names` that `weights` holds."""
    for name in names:
        if name in weights:
            return name
    raise AttnkitError(f"Marian weights: none of {', '.join(names)} in the file")
