"""Multi-head attention (Vaswani et al., 2017, "Attention Is All You Need", Sec. 3.2.2).

    MultiHead(Q, K, V) = Concat(head_1, ..., head_h) W^O,
    head_i = Attention(Q W_i^Q, K W_i^K, V W_i^V),    Attention as in eq. 1 (``scaled_dot``).

The per-head projections W_i^Q, W_i^K, W_i^V of all ``n_heads`` heads are stored as one
``nn.Linear`` each (``q_proj``, ``k_proj``, ``v_proj``) whose outputs ``split_heads`` cuts into
heads of width d_k (queries and keys) and d_v (values); ``merge_heads`` is the Concat and
``out_proj`` is W^O (h d_v -> d_model). The paper's default is d_k = d_v = d_model / h; its
Table 3 row (B) varies d_k on its own, so both are settable.

Decoding state is a value, not module state: ``project_kv`` returns a ``KVCache`` and ``attend``
takes one, so ``forward(q, k, v) == attend(q, project_kv(k, v))``, a decoder step is
``cache = cache.append(mha.project_kv(x_t, x_t)); context, weights = mha.attend(x_t, cache, mask)``,
and cross-attention projects the encoder memory once. ``attend_incremental`` is that decoder step
with one matmul over the stacked W^Q, W^K, W^V.

Stacked projections (self-attention's Q/K/V, a memory's K/V) are concatenated at every call while
training; a module packed for CPU inference (``attnkit.attention.packed.pack_linears`` gives it a
``packed_cache``) keeps the stacked weights, packed for oneDNN, until they change.

``head_mask`` (Michel et al., 2019, "Are Sixteen Heads Really Better than One?", sec. 2.3) gates
each head's output before the Concat: head_i -> xi_i head_i, xi of shape ``(H,)`` or ``(B, H)``.
0 removes a head, 1 leaves it; a mask that requires grad gives the head-importance gradients.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from attnkit.attention import packed
from attnkit.attention.cache import KVCache
from attnkit.attention.scaled_dot import scaled_dot_product_attention


def split_heads(x: Tensor, n_heads: int) -> Tensor:
    """Cut the feature axis into heads.

    Args:
        x: ``(B, T, H * E)``.
        n_heads: ``H``.

    Returns:
        A ``(B, H, T, E)`` view of ``x``.
    """
    b, t, d = x.shape
    return x.view(b, t, n_heads, d // n_heads).transpose(1, 2)  # (B, H, T, E)


def merge_heads(x: Tensor) -> Tensor:
    """Concatenate heads back into the feature axis (the Concat of Sec. 3.2.2).

    Args:
        x: ``(B, H, T, E)``.

    Returns:
        ``(B, T, H * E)``.
    """
    b, h, t, e = x.shape
    return x.transpose(1, 2).reshape(b, t, h * e)  # (B, T, D)


def _head_mask(mask: Tensor | None) -> Tensor | None:
    """Insert the head axis into a ``(B, T|1, S)`` keep-mask; ``(T, S)`` and 4-D masks pass as is."""
    if mask is not None and mask.dim() == 3:
        return mask.unsqueeze(1)  # (B, 1, T|1, S)
    return mask


def _cat_bias(*linears: nn.Linear) -> Tensor | None:
    """Concatenated biases of ``linears`` (all or none have one)."""
    if linears[0].bias is None:
        return None
    return torch.cat([lin.bias for lin in linears])  # (n * D,)


class MultiHeadAttention(nn.Module):
    """Multi-head scaled dot-product attention with separate Q/K/V/output projections.

    Args:
        d_model: model width ``D`` (queries and output).
        n_heads: number of heads ``H``; must divide ``d_model`` unless ``d_k`` and ``d_v`` are given.
        dropout: dropout on the attention weights, in training mode only.
        bias: whether the four projections have biases.
        kdim: width of the keys (default ``d_model``).
        vdim: width of the values (default ``d_model``).
        d_k: per-head width of queries and keys ``E`` (default ``d_model / n_heads``).
        d_v: per-head width of values (default ``d_model / n_heads``).
    """

    packed_cache: packed.PackedCache | None = None  # set by `packed.pack_linears`

    def __init__(
        self,
        d_model: int,
        n_heads: int,
        dropout: float = 0.0,
        bias: bool = True,
        kdim: int | None = None,
        vdim: int | None = None,
        d_k: int | None = None,
        d_v: int | None = None,
    ) -> None:
        super().__init__()
        if (d_k is None or d_v is None) and d_model % n_heads != 0:
            raise ValueError(f"MultiHeadAttention: d_model={d_model} is not divisible by n_heads={n_heads}")
        self.d_model = d_model
        self.n_heads = n_heads
        self.d_k = d_k or d_model // n_heads
        self.d_v = d_v or d_model // n_heads
        self.dropout = dropout
        hk, hv = n_heads * self.d_k, n_heads * self.d_v
        self.q_proj = nn.Linear(d_model, hk, bias=bias)
        self.k_proj = nn.Linear(kdim or d_model, hk, bias=bias)
        self.v_proj = nn.Linear(vdim or d_model, hv, bias=bias)
        self.out_proj = nn.Linear(hv, d_model, bias=bias)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Xavier-uniform weights and zero biases (as ``nn.MultiheadAttention``)."""
        for lin in (self.q_proj, self.k_proj, self.v_proj, self.out_proj):
            nn.init.xavier_uniform_(lin.weight)
            if lin.bias is not None:
                nn.init.zeros_(lin.bias)

    def forward(
        self, query: Tensor, keys: Tensor, values: Tensor, mask: Tensor | None = None, *, need_weights: bool = True, head_mask: Tensor | None = None
    ) -> tuple[Tensor, Tensor | None]:
        """Attend from ``query`` to ``keys``/``values``; equals ``attend(query, project_kv(keys, values))``.

        Self-attention (``query is keys is values``) uses one fused projection.

        Args:
            query: ``(B, T, D)``.
            keys: ``(B, S, Dk)``.
            values: ``(B, S, Dv)``.
            mask: boolean keep-mask ``(B, T|1, S)``, ``(T, S)`` or ``(B, H|1, T|1, S)``.
            need_weights: ``False`` uses ``F.scaled_dot_product_attention`` and returns ``None``.
            head_mask: per-head gate ``(H,)`` or ``(B, H)`` on the heads' outputs, or ``None``.

        Returns:
            context ``(B, T, D)`` and weights ``(B, H, T, S)`` (or ``None``).
        """
        if query is keys and keys is values and self._fusable:
            q, k, v = self._project_qkv(query)  # (B, H, T, E) each
            return self._attend_heads(q, KVCache(k, v), mask, need_weights, head_mask)  # (B, T, D), (B, H, T, S)
        kv = self.project_kv(keys, values)  # k, v (B, H, S, E)
        return self.attend(query, kv, mask, need_weights=need_weights, head_mask=head_mask)  # (B, T, D), (B, H, T, S)

    @property
    def _fusable(self) -> bool:
        """Whether the projections are plain weight matrices that can be stacked into one matmul.

        Dynamic int8 quantisation (`attnkit.precision.quantize_int8`) replaces them with modules
        holding packed int8 weights; those are then called one by one.
        """
        return isinstance(self.k_proj.weight, Tensor)

    def project_kv(self, keys: Tensor, values: Tensor) -> KVCache:
        """Project keys and values and split them into heads.

        Args:
            keys: ``(B, S, Dk)``.
            values: ``(B, S, Dv)``.

        Returns:
            ``KVCache`` with k and v ``(B, H, S, E)``.
        """
        if keys is values and self._fusable:  # one matmul for both (cross-attention over a memory)
            kv = self._stacked_linear(keys, "kv", self.k_proj, self.v_proj)  # (B, S, H(E+Ev))
            k, v = self._split(kv, 2)  # (B, H, S, E), (B, H, S, Ev)
            return KVCache(k, v)
        k = split_heads(self.k_proj(keys), self.n_heads)  # (B, H, S, E)
        v = split_heads(self.v_proj(values), self.n_heads)  # (B, H, S, E)
        return KVCache(k, v)

    def attend(
        self, query: Tensor, kv: KVCache, mask: Tensor | None = None, *, need_weights: bool = True, head_mask: Tensor | None = None
    ) -> tuple[Tensor, Tensor | None]:
        """Attend from ``query`` to already projected keys and values.

        Args:
            query: ``(B, T, D)``.
            kv: ``KVCache`` with k and v ``(B, H, S, E)``.
            mask: boolean keep-mask ``(B, T|1, S)``, ``(T, S)`` or ``(B, H|1, T|1, S)``.
            need_weights: ``False`` uses ``F.scaled_dot_product_attention`` and returns ``None``.
            head_mask: per-head gate ``(H,)`` or ``(B, H)`` on the heads' outputs, or ``None``.

        Returns:
            context ``(B, T, D)`` and weights ``(B, H, T, S)`` (or ``None``).
        """
        q = split_heads(self.q_proj(query), self.n_heads)  # (B, H, T, E)
        return self._attend_heads(q, kv, mask, need_weights, head_mask)  # (B, T, D), (B, H, T, S)

    def attend_incremental(
        self,
        x: Tensor,
        cache: KVCache,
        mask: Tensor | None = None,
        *,
        need_weights: bool = True,
        head_mask: Tensor | None = None,
        rows: Tensor | None = None,
    ) -> tuple[Tensor, Tensor | None, KVCache]:
        """Self-attention of T new positions (a decoder step) over themselves and the cached earlier ones.

        Equals ``kv = cache.append(project_kv(x, x), rows); attend(x, kv, mask)``, with the queries,
        keys and values projected by one matmul.

        Args:
            x: ``(B, T, D)`` the new positions.
            cache: ``KVCache`` of the earlier positions, k and v ``(B, H, S0, E)``.
            mask: boolean keep-mask broadcastable to ``(B, H, T, S0 + T)``, or ``None``.
            need_weights: ``False`` lets several queries use ``F.scaled_dot_product_attention``.
            head_mask: per-head gate ``(H,)`` or ``(B, H)``, or ``None``.
            rows: ``(B,)`` the rows of ``cache`` that the B positions continue (beam search's
                reordering, copied once with the append), or ``None``: all of them, in order.

        Returns:
            context ``(B, T, D)``, weights ``(B, H, T, S0 + T)`` (or ``None``) and the cache
            extended by the T positions.
        """
        if not self._fusable:
            kv = cache.append(self.project_kv(x, x), rows)  # (B, H, S0 + T, E)
            return (*self.attend(x, kv, mask, need_weights=need_weights, head_mask=head_mask), kv)
        q, k, v = self._project_qkv(x)  # (B, H, T, E) each
        kv = cache.append(KVCache(k, v), rows)  # (B, H, S0 + T, E)
        return (*self._attend_heads(q, kv, mask, need_weights, head_mask), kv)

    def _project_qkv(self, x: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        """Self-attention projections as one matmul over the stacked W^Q, W^K, W^V."""
        qkv = self._stacked_linear(x, "qkv", self.q_proj, self.k_proj, self.v_proj)  # (B, T, H(2E+Ev))
        q, k, v = self._split(qkv, 3)  # (B, H, T, E), (B, H, T, E), (B, H, T, Ev)
        return q, k, v

    def _stacked_linear(self, x: Tensor, name: str, *linears: nn.Linear) -> Tensor:
        """``x`` times the weights of ``linears`` stacked on the output axis, plus their biases.

        The stacked matrix is concatenated at each call, or, in a packed module where
        ``packed.packable`` holds, kept (and packed) until one of its parts changes.
        """
        weights = [lin.weight for lin in linears]
        if self.packed_cache is None or not packed.packable(x, weights[0]):
            return F.linear(x, torch.cat(weights), _cat_bias(*linears))  # (B, T, n * H * E)
        sources = (*weights, *(lin.bias for lin in linears))
        weight, bias = packed.kept(self.packed_cache, name, sources, lambda: (torch.cat(weights), _cat_bias(*linears)))
        return packed.linear(x, weight, bias, self.packed_cache, f"{name}.packed")  # (B, T, n * H * E)

    def _split(self, fused: Tensor, parts: int) -> tuple[Tensor, ...]:
        """Heads of the last `parts` of [q;] k; v stacked on the feature axis (widths E, E, Ev)."""
        if self.d_k == self.d_v:  # one view and a chunk: the common case, on every decoding step
            return split_heads(fused, parts * self.n_heads).chunk(parts, dim=1)  # (B, H, T, E) each
        widths = [self.n_heads * self.d_k] * (parts - 1) + [self.n_heads * self.d_v]
        return tuple(split_heads(x, self.n_heads) for x in fused.split(widths, dim=-1))  # (B, H, T, E|Ev)

    def _attend_heads(self, q: Tensor, kv: KVCache, mask: Tensor | None, need_weights: bool, head_mask: Tensor | None = None) -> tuple[Tensor, Tensor | None]:
        """Eq. 1 per head, then the head gates (if any), Concat and W^O."""
        p = self.dropout if self.training else 0.0
        mask = _head_mask(mask)  # (B, 1, T|1, S) or as given
        context, weights = scaled_dot_product_attention(q, kv.k, kv.v, mask, p, need_weights)  # (B, H, T, E)
        if head_mask is not None:
            context = context * head_mask.to(context.dtype)[..., :, None, None]  # (B, H, T, E)
        return self.out_proj(merge_heads(context)), weights  # (B, T, D), (B, H, T, S)
