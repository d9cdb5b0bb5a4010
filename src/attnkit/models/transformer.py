"""The Transformer of Vaswani et al. (2017), "Attention Is All You Need".

Encoder and decoder stacks of N layers (sec. 3.1); each sub-layer is wrapped as published,
`LayerNorm(x + Dropout(Sublayer(x)))` (post-norm), or as `x + Dropout(Sublayer(LayerNorm(x)))`
(pre-norm, with a final LayerNorm per stack). Sub-layers: multi-head self-attention, causal
self-attention and encoder-decoder attention (sec. 3.2), and the position-wise feed-forward network
`FFN(x) = max(0, x W1 + b1) W2 + b2` (eq. 2; `activation` swish or gelu replaces the max). Token
embeddings are scaled by sqrt(d_model) and summed with positional encodings (sec. 3.4, 3.5);
source/target embeddings and the output projection share one matrix when the vocabulary is joint.
`output_bias` adds a fixed bias to the logits (Marian's `final_logits_bias`, for imported models).

Decoding follows the protocol in docs/conventions.md: `encode`, `init_state`, `step`. The state
holds each decoder layer's self-attention keys/values (growing one position a step) and its
cross-attention keys/values (computed once).

`HeadMask` gates each head's output per layer (Michel et al. 2019, sec. 2.3): `forward`, `encode`,
`decode` and `step` take one; None (the default) runs exactly the unmasked model.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from attnkit.attention import packed
from attnkit.attention.cache import KVCache
from attnkit.attention.masks import causal_mask
from attnkit.attention.multihead import MultiHeadAttention
from attnkit.attention.positional import LearnedPositionalEmbedding, SinusoidalPositionalEncoding
from attnkit.decode.beam_state import per_sentence, picked_by
from attnkit.models.dropout import Dropout
from attnkit.models.maps import AttentionMaps

# The FFN's nonlinearity: the paper's ReLU, or swish (x * sigmoid(x), OPUS-MT's Marian models) or GELU.
ACTIVATIONS = {"relu": F.relu, "swish": F.silu, "gelu": F.gelu}


class FeedForward(nn.Module):
    """Position-wise FFN (eq. 2): `max(0, x W1 + b1) W2 + b2` (another `activation` replaces the max).

    As in the paper, dropout applies to the sub-layer's output (in `Residual`), not inside the FFN.
    Packed for CPU inference (`packed.pack_linears`), the ReLU is applied by the first GEMM.
    """

    def __init__(self, d_model: int, d_ff: int, activation: str = "relu") -> None:
        super().__init__()
        self.w_1 = nn.Linear(d_model, d_ff)
        self.w_2 = nn.Linear(d_ff, d_model)
        self.activation = activation
        self.act = ACTIVATIONS[activation]

    def forward(self, x: Tensor) -> Tensor:
        if self.activation == "relu" and isinstance(self.w_1, packed.PackedLinear):
            h = packed.linear(x, self.w_1.weight, self.w_1.bias, self.w_1.packed_cache, "weight", relu=True)  # (B, T, F)
        else:
            h = self.act(self.w_1(x))  # (B, T, F)
        return self.w_2(h)  # (B, T, D)


class Residual(nn.Module):
    """Residual connection with LayerNorm, post-norm (paper) or pre-norm."""

    def __init__(self, d_model: int, dropout: float, pre_norm: bool) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(d_model)
        self.dropout = Dropout(dropout)
        self.pre_norm = pre_norm

    def inner(self, x: Tensor) -> Tensor:
        """The sub-layer's input: `LayerNorm(x)` for pre-norm, `x` for post-norm."""
        return self.norm(x) if self.pre_norm else x

    def outer(self, x: Tensor, sublayer_out: Tensor) -> Tensor:
        """Combine: `x + Dropout(out)` (pre-norm) or `LayerNorm(x + Dropout(out))` (post-norm)."""
        y = x + self.dropout(sublayer_out)  # (B, T, D)
        return y if self.pre_norm else self.norm(y)


class EncoderLayer(nn.Module):
    def __init__(self, d_model: int, n_heads: int, d_ff: int, dropout: float, attention_dropout: float, pre_norm: bool,
                 d_k: int | None = None, d_v: int | None = None, activation: str = "relu") -> None:  # fmt: skip
        super().__init__()
        self.self_attn = MultiHeadAttention(d_model, n_heads, dropout=attention_dropout, d_k=d_k, d_v=d_v)
        self.ffn = FeedForward(d_model, d_ff, activation)
        self.res_attn = Residual(d_model, dropout, pre_norm)
        self.res_ffn = Residual(d_model, dropout, pre_norm)

    def forward(self, x: Tensor, keep: Tensor, need_weights: bool = False, head_mask: Tensor | None = None) -> tuple[Tensor, Tensor | None]:
        """x (B, S, D), keep (B, 1, 1, S), head_mask (H,) or None -> (x (B, S, D), weights (B, H, S, S) or None)."""
        h = self.res_attn.inner(x)  # (B, S, D)
        a, weights = self.self_attn(h, h, h, keep, need_weights=need_weights, head_mask=head_mask)  # (B, S, D)
        x = self.res_attn.outer(x, a)  # (B, S, D)
        x = self.res_ffn.outer(x, self.ffn(self.res_ffn.inner(x)))  # (B, S, D)
        return x, weights


@dataclass
class LayerAttention:
    """One decoder layer's attention weights: self (B, H, T, T') and cross (B, H, T, S)."""

    self_attn: Tensor | None
    cross_attn: Tensor | None


@dataclass
class HeadMask:
    """Per-layer head gates (Michel et al. 2019): each head's output times its entry; None leaves a kind ungated."""

    encoder: Tensor | None = None  # (L_enc, H)
    decoder_self: Tensor | None = None  # (L_dec, H)
    cross: Tensor | None = None  # (L_dec, H)

    @staticmethod
    def row(mask: Tensor | None, layer: int) -> Tensor | None:
        """Layer `layer`'s gates (H,), or None."""
        return None if mask is None else mask[layer]


class DecoderLayer(nn.Module):
    def __init__(self, d_model: int, n_heads: int, d_ff: int, dropout: float, attention_dropout: float, pre_norm: bool,
                 d_k: int | None = None, d_v: int | None = None, activation: str = "relu") -> None:  # fmt: skip
        super().__init__()
        self.self_attn = MultiHeadAttention(d_model, n_heads, dropout=attention_dropout, d_k=d_k, d_v=d_v)
        self.cross_attn = MultiHeadAttention(d_model, n_heads, dropout=attention_dropout, d_k=d_k, d_v=d_v)
        self.ffn = FeedForward(d_model, d_ff, activation)
        self.res_self = Residual(d_model, dropout, pre_norm)
        self.res_cross = Residual(d_model, dropout, pre_norm)
        self.res_ffn = Residual(d_model, dropout, pre_norm)

    def forward(
        self,
        x: Tensor,
        self_kv: KVCache | None,
        cross_kv: KVCache,
        self_keep: Tensor | None,
        cross_keep: Tensor,
        need_self_weights: bool = False,
        need_cross_weights: bool = False,
        gates: tuple[Tensor | None, Tensor | None] = (None, None),
        rows: Tensor | None = None,
    ) -> tuple[Tensor, KVCache | None, LayerAttention]:
        """Run the layer on T new positions of R = B*K rows, K consecutive rows per sentence.

        Args:
            x: (R, T, D) the new positions' inputs (K = 1 outside beam search).
            self_kv: keys/values of earlier positions (R, H, T0, E), or None for a full pass.
            cross_kv: projected encoder memory (B, H, S, E), shared by the K rows of a sentence.
            self_keep: causal keep-mask broadcastable to (R, 1, T, T0 + T), or None (single step).
            cross_keep: source keep-mask (B, 1, 1, S).
            gates: head gates (H,) of the self and the cross attention, or None each.
            rows: (R,) the rows of self_kv the R rows continue (picked as the cache is extended), or None.

        Returns:
            x (R, T, D), the self-attention cache extended by T positions (None for a full pass),
            and the weights asked for.
        """
        h = self.res_self.inner(x)  # (R, T, D)
        if self_kv is None:  # full teacher-forced pass: one fused Q/K/V projection
            kv = None
            a, self_w = self.self_attn(h, h, h, self_keep, need_weights=need_self_weights, head_mask=gates[0])  # (R, T, D)
        else:  # a step: one fused Q/K/V projection of the new positions; kv (R, H, T0 + T, E)
            a, self_w, kv = self.self_attn.attend_incremental(h, self_kv, self_keep, need_weights=need_self_weights, head_mask=gates[0], rows=rows)  # (R, T, D)
        x = self.res_self.outer(x, a)  # (R, T, D)
        a, cross_w = self._cross_attend(self.res_cross.inner(x), cross_kv, cross_keep, need_cross_weights, gates[1])  # (R, T, D)
        x = self.res_cross.outer(x, a)  # (R, T, D)
        x = self.res_ffn.outer(x, self.ffn(self.res_ffn.inner(x)))  # (R, T, D)
        return x, kv, LayerAttention(self_w, cross_w)

    def _cross_attend(self, h: Tensor, kv: KVCache, keep: Tensor, need_weights: bool, head_mask: Tensor | None = None) -> tuple[Tensor, Tensor | None]:
        """Encoder-decoder attention where the K beams of a sentence share its memory.

        The T queries of each of the K rows become K*T queries of their sentence, so the memory's
        keys and values are neither copied per beam nor reordered by beam search.
        """
        R, T, D = h.shape
        B = kv.k.size(0)
        a, w = self.cross_attn.attend(h.reshape(B, -1, D), kv, keep, need_weights=need_weights, head_mask=head_mask)  # (B, K*T, D)
        if w is not None:  # (B, H, K*T, S) -> (R, H, T, S)
            H, S = w.size(1), w.size(-1)
            w = w.view(B, H, R // B, T, S).transpose(1, 2).reshape(R, H, T, S)
        return a.reshape(R, T, D), w


@dataclass
class TransformerState:
    """Decoding state: per-layer self-attention caches (grow a step) and cross-attention K/V.

    A search's reordering picks `rows` only; the next step copies those rows of the caches once,
    as it appends to them (`KVCache.append(new, rows)`). `rows` None: the caches' rows as they are.
    """

    self_kv: list[KVCache] = picked_by("rows")  # (R0, H, t, E) per layer, as stored
    cross_kv: list[KVCache] = per_sentence()  # (B, H, S, E) per layer
    src_keep: Tensor = per_sentence()  # (B, 1, 1, S)
    position: int = 0
    rows: Tensor | None = None  # (R,) the row of self_kv each of the R = B*K rows continues


class Transformer(nn.Module):
    """Encoder-decoder Transformer; `forward` is teacher-forced, `step` decodes one token."""

    packed_cache: packed.PackedCache | None = None  # the tied output projection's, set by `packed.pack_linears`

    def __init__(
        self,
        *,
        src_vocab_size: int,
        tgt_vocab_size: int,
        d_model: int = 512,
        n_heads: int = 8,
        d_ff: int = 2048,
        d_k: int | None = None,
        d_v: int | None = None,
        encoder_layers: int = 6,
        decoder_layers: int = 6,
        dropout: float = 0.1,
        attention_dropout: float = 0.0,
        pre_norm: bool = False,
        learned_positions: bool = False,
        max_positions: int = 1024,
        share_embeddings: bool = True,
        tie_output: bool = True,
        pad_id: int = 0,
        activation: str = "relu",
        output_bias: bool = False,
    ) -> None:
        super().__init__()
        if share_embeddings and src_vocab_size != tgt_vocab_size:
            raise ValueError("share_embeddings needs one joint vocabulary (source and target sizes differ)")
        self.d_model = d_model
        self.pad_id = pad_id
        self.src_embed = nn.Embedding(src_vocab_size, d_model, padding_idx=pad_id)
        self.tgt_embed = self.src_embed if share_embeddings else nn.Embedding(tgt_vocab_size, d_model, padding_idx=pad_id)
        if learned_positions:
            self.positions = LearnedPositionalEmbedding(max_positions, d_model)
        else:
            self.positions = SinusoidalPositionalEncoding(d_model)
        self.embed_dropout = Dropout(dropout)
        layer_args = (d_model, n_heads, d_ff, dropout, attention_dropout, pre_norm, d_k, d_v, activation)
        self.encoder_layers = nn.ModuleList(EncoderLayer(*layer_args) for _ in range(encoder_layers))
        self.decoder_layers = nn.ModuleList(DecoderLayer(*layer_args) for _ in range(decoder_layers))
        self.encoder_norm = nn.LayerNorm(d_model) if pre_norm else nn.Identity()
        self.decoder_norm = nn.LayerNorm(d_model) if pre_norm else nn.Identity()
        self.output = None if tie_output else nn.Linear(d_model, tgt_vocab_size, bias=False)
        # A fixed bias added to the logits (Marian's `final_logits_bias`, imported models): a buffer, not trained.
        self.final_logits_bias: Tensor | None
        self.register_buffer("final_logits_bias", torch.zeros(tgt_vocab_size) if output_bias else None)  # (V,)
        self._reset_parameters()

    def _reset_parameters(self) -> None:
        # Embeddings ~ N(0, d_model^-0.5) so that scaling by sqrt(d_model) gives unit variance
        # (the usual choice with a tied output projection, as in fairseq and tensor2tensor).
        for embed in dict.fromkeys([self.src_embed, self.tgt_embed]):  # in order (a set would order by id: runs would differ)
            nn.init.normal_(embed.weight, mean=0.0, std=self.d_model**-0.5)
            nn.init.zeros_(embed.weight[self.pad_id])
        for name, p in self.named_parameters():
            if p.dim() > 1 and "embed" not in name:
                nn.init.xavier_uniform_(p)

    def embed(self, tokens: Tensor, embedding: nn.Embedding, start: int = 0, inputs: Tensor | None = None) -> Tensor:
        """tokens (B, T) -> (B, T, D): embedding * sqrt(d_model) (+ `inputs` (B, T, D)) + positions, then dropout."""
        x = embedding(tokens) * math.sqrt(self.d_model)  # (B, T, D)
        if inputs is not None:
            x = x + inputs  # (B, T, D)
        return self.embed_dropout(self.positions(x, start=start))  # (B, T, D)

    @property
    def output_weight(self) -> Tensor:
        """The output projection (V, D): the target embedding when tied."""
        return self.tgt_embed.weight if self.output is None else self.output.weight

    def logits(self, x: Tensor) -> Tensor:
        """Decoder output (..., D) -> vocabulary logits (..., V) (+ `final_logits_bias` if the model has one)."""
        if self.output is not None:
            logits = self.output(x)  # (..., V)
        else:
            logits = packed.linear(x, self.tgt_embed.weight, None, self.packed_cache, "output")  # (..., V)
        if self.final_logits_bias is not None:
            logits = logits + self.final_logits_bias.to(logits.dtype)  # (..., V)
        return logits

    def untie_output(self) -> None:
        """Give the output projection its own `nn.Linear`, a copy of the tied target embedding.

        The logits do not change. Inference calls it before rewriting the model's `nn.Linear`
        modules (dynamic int8 quantisation, `attnkit.precision.quantize_int8`), which would
        otherwise miss the largest matrix of a decoding step (V x D).
        """
        if self.output is None:
            self.output = nn.Linear(self.d_model, self.tgt_embed.num_embeddings, bias=False)
            self.output.weight = nn.Parameter(self.tgt_embed.weight.detach().clone())

    def encode(self, src: Tensor, src_keep: Tensor, need_weights: bool = False, head_mask: HeadMask | None = None) -> Tensor:
        """src (B, S), src_keep (B, S) -> memory (B, S, D)."""
        return self._encode(src, src_keep, need_weights, head_mask)[0]

    def _encode(self, src: Tensor, src_keep: Tensor, need_weights: bool, head_mask: HeadMask | None = None) -> tuple[Tensor, list[Tensor]]:
        keep = src_keep[:, None, None, :]  # (B, 1, 1, S)
        x = self.embed(src, self.src_embed)  # (B, S, D)
        gates = None if head_mask is None else head_mask.encoder  # (L, H) or None
        maps = []
        for i, layer in enumerate(self.encoder_layers):
            x, w = layer(x, keep, need_weights, HeadMask.row(gates, i))  # (B, S, D)
            maps.append(w)
        return self.encoder_norm(x), maps  # (B, S, D)

    def _cross_kv(self, memory: Tensor) -> list[KVCache]:
        """Each decoder layer's cross-attention K/V (B, H, S, E), contiguous: every step reads them."""
        kvs = (layer.cross_attn.project_kv(memory, memory) for layer in self.decoder_layers)
        return [KVCache(kv.k.contiguous(), kv.v.contiguous()) for kv in kvs]

    def decode(
        self, tgt_in: Tensor, memory: Tensor, src_keep: Tensor, need_weights: bool = False, inputs: Tensor | None = None, head_mask: HeadMask | None = None
    ) -> tuple[Tensor, list[LayerAttention]]:
        """Teacher-forced decoder pass: tgt_in (B, T) -> (features (B, T, D), per-layer weights).

        `inputs` (B, T, D), if given, is added to the target embeddings (a family's extra decoder input).
        """
        T = tgt_in.size(1)
        self_keep = causal_mask(T, device=tgt_in.device)  # (T, T)
        cross_keep = src_keep[:, None, None, :]  # (B, 1, 1, S)
        x = self.embed(tgt_in, self.tgt_embed, inputs=inputs)  # (B, T, D)
        maps = []
        for i, (layer, kv) in enumerate(zip(self.decoder_layers, self._cross_kv(memory))):
            x, _, w = layer(x, None, kv, self_keep, cross_keep, need_weights, need_weights, _decoder_gates(head_mask, i))  # (B, T, D)
            maps.append(w)
        return self.decoder_norm(x), maps  # (B, T, D)

    def features(self, src: Tensor, src_keep: Tensor, tgt_in: Tensor, head_mask: HeadMask | None = None) -> Tensor:
        """Teacher forcing up to the output projection: -> decoder features (B, T, D)."""
        memory = self.encode(src, src_keep, head_mask=head_mask)  # (B, S, D)
        return self.decode(tgt_in, memory, src_keep, head_mask=head_mask)[0]  # (B, T, D)

    def forward(self, src: Tensor, src_keep: Tensor, tgt_in: Tensor, head_mask: HeadMask | None = None) -> Tensor:
        """Teacher forcing: src (B, S), src_keep (B, S), tgt_in (B, T) -> logits (B, T, V)."""
        return self.logits(self.features(src, src_keep, tgt_in, head_mask))  # (B, T, V)

    def attentions(self, src: Tensor, src_keep: Tensor, tgt_in: Tensor) -> AttentionMaps:
        """All attention maps of a teacher-forced pass (for plots): per layer (B, H, Tq, Tk)."""
        memory, enc = self._encode(src, src_keep, need_weights=True)  # (B, S, D)
        _, dec = self.decode(tgt_in, memory, src_keep, need_weights=True)
        return AttentionMaps(enc, [m.self_attn for m in dec], [m.cross_attn for m in dec])

    def init_state(self, memory: Tensor, src_keep: Tensor) -> TransformerState:
        """Start decoding: cross-attention K/V computed once, empty self-attention caches."""
        attn = self.decoder_layers[0].self_attn
        B, H = memory.size(0), attn.n_heads
        empty_k, empty_v = memory.new_zeros(B, H, 0, attn.d_k), memory.new_zeros(B, H, 0, attn.d_v)  # (B, H, 0, E|Ev)
        return TransformerState(
            self_kv=[KVCache(empty_k, empty_v) for _ in self.decoder_layers],
            cross_kv=self._cross_kv(memory),
            src_keep=src_keep[:, None, None, :],  # (B, 1, 1, S)
            position=0,
            rows=torch.arange(B, device=memory.device),  # (B,)
        )

    def step(
        self, prev_tokens: Tensor, state: TransformerState, inputs: Tensor | None = None, head_mask: HeadMask | None = None
    ) -> tuple[Tensor, TransformerState, Tensor]:
        """One decoding step.

        Args:
            prev_tokens: (B, 1) the previous output token (BOS first).
            state: from `init_state` or the previous step.
            inputs: (B, 1, D) added to the target embedding, as in `decode` (or None).
            head_mask: the decoder's head gates (its `encoder` field applies in `encode`), or None.

        Returns:
            logits (B, V) (searches normalise them), the new state, and the last layer's
            cross-attention averaged over heads (B, S).
        """
        x = self.embed(prev_tokens, self.tgt_embed, start=state.position, inputs=inputs)  # (B, 1, D)
        new_kv = []
        last = len(self.decoder_layers) - 1
        for i, (layer, self_kv, cross_kv) in enumerate(zip(self.decoder_layers, state.self_kv, state.cross_kv)):
            x, kv, w = layer(x, self_kv, cross_kv, None, state.src_keep, need_cross_weights=i == last, gates=_decoder_gates(head_mask, i), rows=state.rows)
            new_kv.append(kv)
        logits = self.logits(self.decoder_norm(x[:, -1]))  # (B, V)
        attn = w.cross_attn.mean(dim=1)[:, -1]  # (B, S)
        rows = None if state.rows is None else torch.arange(x.size(0), device=x.device)  # (B,) the caches are in order now
        return logits, TransformerState(new_kv, state.cross_kv, state.src_keep, state.position + 1, rows), attn


def _decoder_gates(head_mask: HeadMask | None, layer: int) -> tuple[Tensor | None, Tensor | None]:
    """Decoder layer `layer`'s (self, cross) head gates (H,) each, or None each."""
    if head_mask is None:
        return None, None
    return HeadMask.row(head_mask.decoder_self, layer), HeadMask.row(head_mask.cross, layer)
