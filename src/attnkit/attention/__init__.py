"""attnkit.attention: the attention mechanisms of the papers attnkit reproduces.

Shapes (batch-first everywhere, one alphabet):
    B batch, S source/key length, T target/query length, D model width, H heads,
    E per-head width (d_k), R attention hops, P grid cells (gh * gw), C channels.

The interface: every attention module is called as

    context, weights = attn(query, keys, values, mask=None, need_weights=True)

with query (B, Tq, Dq), keys (B, Tk, Dk), values (B, Tk, Dv) -> context (B, Tq, Dv) and weights
(B, Tq, Tk), or (B, H, Tq, Tk) for multi-head: probabilities over the last axis. Weights are None
only when need_weights=False selected the fused ``F.scaled_dot_product_attention`` path (multi-head,
scaled dot, conv block). Structured attention takes (H, mask) and treats its R hops as learned
queries; spatial attention takes (query, features) and flattens the grid to P cells at its edge.

The mask rule: masks are boolean and True means "may attend" (keep), as in
``F.scaled_dot_product_attention``. They broadcast to (B, [H,] Tq, Tk) and are built by
``padding_mask`` (B, 1, S), ``causal_mask`` (T, S) and ``combine_masks``. Only ``masked_softmax``
turns them into fill values: masked keys get exactly 0 weight and a row without any valid key gets
all-zero weights, never NaN.

State is passed, not stored: projected keys (``project_keys``) and key/value caches (``KVCache``)
are values that methods return and callers pass back in.
"""

from attnkit.attention.additive import AdditiveAttention
from attnkit.attention.cache import KVCache
from attnkit.attention.conv_block import ConvSelfAttention
from attnkit.attention.luong import AttentionalLayer, LuongAttention
from attnkit.attention.masks import causal_mask, combine_masks, masked_softmax, padding_mask
from attnkit.attention.multihead import MultiHeadAttention, merge_heads, split_heads
from attnkit.attention.positional import LearnedPositionalEmbedding, SinusoidalPositionalEncoding, sinusoidal_encoding
from attnkit.attention.scaled_dot import ScaledDotProductAttention, scaled_dot_product_attention
from attnkit.attention.spatial import SpatialAttention, flatten_grid, unflatten_weights
from attnkit.attention.structured import StructuredSelfAttention, frobenius_penalty

__all__ = [
    "AdditiveAttention",
    "AttentionalLayer",
    "ConvSelfAttention",
    "KVCache",
    "LearnedPositionalEmbedding",
    "LuongAttention",
    "MultiHeadAttention",
    "ScaledDotProductAttention",
    "SinusoidalPositionalEncoding",
    "SpatialAttention",
    "StructuredSelfAttention",
    "causal_mask",
    "combine_masks",
    "flatten_grid",
    "frobenius_penalty",
    "masked_softmax",
    "merge_heads",
    "padding_mask",
    "scaled_dot_product_attention",
    "sinusoidal_encoding",
    "split_heads",
    "unflatten_weights",
]
