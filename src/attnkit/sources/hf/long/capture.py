"""What the long road keeps of each layer: its post-rotary queries and keys, through transformers' `AttentionInterface`.

`register()` adds the attention implementation `IMPLEMENTATION` to transformers (and its mask to
the mask interface, the same as SDPA's), and a model loaded with `attn_implementation=IMPLEMENTATION`
calls `attend` in each attention module. `attend` hands the module's query (1, H, N, D) and key
(1, Hkv, N, D) (after the rotary embedding, before the grouped-query repeat) with the module's
`scaling`, `sliding_window`, `softcap` and whether it is causal (SDPA's rule: the call's `is_causal`,
else the module's, else causal; an encoder's, BERT's, is not) to the `Capture` opened by
`capturing`, then computes the layer's output as the kernel would: `sdpa_attention_forward`
(PyTorch's fused kernel, which never returns weights), or, where the logits are soft-capped (Gemma
2, for which SDPA has no path), `blocks.blockwise_attention`. The mask itself is not kept: the long
road reads one document with no padding, so the mask SDPA gets is none (transformers drops an
all-ones one) or that of the causal and window rule, which the kept layer rebuilds (`blocks`).
Layers are numbered by call order from 1, as the npz numbers them. While `generate` runs, the
capture keeps instead each pass's last row (`Capture.per_pass`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, MutableMapping
from contextlib import contextmanager
from dataclasses import dataclass, field

from torch import Tensor

from attnkit.sources.hf.long.blocks import KeptLayer, blockwise_attention, probabilities

IMPLEMENTATION = "attnkit_long"


@dataclass
class Capture:
    """The kept layers of one forward pass (batch 1); `layers` limits which (1-based; None: all).

    With `per_pass` (the model's layer count) it records generation instead: every forward pass of
    `generate` (the prompt's, then one per new token), the exact attention row of its last query,
    (H, keys) as the layer saw them, into `steps`; layer numbers restart with each pass."""

    layers: frozenset[int] | None = None
    queries: Tensor | None = None  # (m,) positions whose queries are kept (None: every query)
    kept: MutableMapping[int, KeptLayer] = field(default_factory=dict)  # or on disk (`spill.Spilled`)
    calls: int = 0  # attention calls so far
    per_pass: int | None = None  # generation: attention calls per forward pass
    steps: dict[int, list[Tensor]] = field(default_factory=dict)  # generation: per layer, (H, keys) rows
    after: Callable[[], None] | None = None  # called after each attention call (progress)

    def record(self, query: Tensor, key: Tensor, scaling: float | None, sliding_window: int | None, softcap: float | None, causal: bool) -> None:
        """Keep this attention call's layer (or, generating, its last query's row)."""
        self.calls += 1
        if self.after is not None:
            self.after()
        number = self.calls if self.per_pass is None else (self.calls - 1) % self.per_pass + 1
        if self.layers is not None and number not in self.layers:
            return
        if self.per_pass is None:
            self.kept[number] = _kept(query, key, scaling, sliding_window, softcap, causal, self.queries)
            return
        layer = _kept(query, key, scaling, sliding_window, softcap, causal, copy=False)
        row, lo = probabilities(layer, layer.query.size(1) - 1, layer.query.size(1))  # (H, 1, n)
        full = row.new_zeros(layer.heads, layer.length)  # (H, keys)
        full[:, lo:] = row[:, 0]
        self.steps.setdefault(number, []).append(full.cpu())


_active: list[Capture] = []  # the open capture (at most one)


def _kept(query: Tensor, key: Tensor, scaling: float | None, sliding_window: int | None, softcap: float | None, causal: bool,
          positions: Tensor | None = None, copy: bool = True) -> KeptLayer:  # fmt: skip
    """A layer's queries (H, N, D) (or those at `positions`, (H, m, D)) and keys (Hkv, N, D), copied out of the
    forward pass's buffers (or not: `copy` False, for this call only)."""
    scale = scaling if scaling is not None else query.size(-1) ** -0.5
    window = sliding_window if sliding_window is not None and sliding_window < key.size(2) else None
    positions = None if positions is None else positions.to(query.device)
    q = query[0].detach() if positions is None else query[0, :, positions].detach()  # (H, N or m, D)
    k = key[0].detach()  # (Hkv, N, D)
    if copy:
        q, k = q.clone(), k.clone()
    return KeptLayer(q, k, float(scale), window, softcap, positions, causal)


def attend(module, query: Tensor, key: Tensor, value: Tensor, attention_mask: Tensor | None, dropout: float = 0.0,
           scaling: float | None = None, sliding_window: int | None = None, softcap: float | None = None, **kwargs):  # fmt: skip
    """The attention interface: keep query and key for the open capture, then attend as the kernel does."""
    from transformers.integrations.sdpa_attention import sdpa_attention_forward

    causal = kwargs.get("is_causal")
    causal = getattr(module, "is_causal", True) if causal is None else causal  # (SDPA's rule)
    if _active:
        _active[-1].record(query, key, scaling, sliding_window, softcap, causal)
    if softcap is not None:
        layer = _kept(query, key, scaling, sliding_window, softcap, causal, copy=False)
        return blockwise_attention(layer, value[0]).transpose(0, 1).unsqueeze(0), None  # (1, N, H, D)
    return sdpa_attention_forward(module, query, key, value, attention_mask, dropout=dropout, scaling=scaling, **kwargs)


def register() -> None:
    """Make `IMPLEMENTATION` a name transformers accepts as `attn_implementation` (idempotent)."""
    from transformers import AttentionInterface
    from transformers.masking_utils import ALL_MASK_ATTENTION_FUNCTIONS, sdpa_mask

    AttentionInterface.register(IMPLEMENTATION, attend)
    ALL_MASK_ATTENTION_FUNCTIONS.register(IMPLEMENTATION, sdpa_mask)


@contextmanager
def capturing(layers: frozenset[int] | None = None, queries: Tensor | None = None, per_pass: int | None = None,
              after: Callable[[], None] | None = None, kept: MutableMapping[int, KeptLayer] | None = None) -> Iterator[Capture]:  # fmt: skip
    """Keep the keys and queries (all, or those at positions `queries`) of the attention calls inside the block,
    of the layers numbered in `layers` (None: all), in `kept` (default a dict); or, with `per_pass`, the rows of
    generation (`Capture`)."""
    capture = Capture(layers, queries, {} if kept is None else kept, per_pass=per_pass, after=after)
    _active.append(capture)
    try:
        yield capture
    finally:
        _active.remove(capture)
