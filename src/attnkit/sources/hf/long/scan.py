"""One pass over a kept layer's query blocks: the summaries, the pooled maps (with and without the
sink) and a rollout step, all from the same exact blocks; and exact rows for chosen queries."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import torch
from torch import Tensor

from attnkit.sources.hf.long.blocks import BLOCK_BYTES, KeptLayer, logits, probabilities, row_blocks, workspace
from attnkit.sources.hf.long.pooling import Pooled
from attnkit.sources.hf.long.rollout import RolloutStep
from attnkit.sources.hf.long.summaries import NAMES, block_summaries


@dataclass
class LayerScan:
    """What one pass gives for a layer: per-query summaries (H, N) and pooled maps (H, t, t) by level."""

    summaries: dict[str, Tensor] = field(default_factory=dict)
    pooled: dict[int, Tensor] = field(default_factory=dict)
    pooled_without_sink: dict[int, Tensor] = field(default_factory=dict)


@torch.inference_mode()
def scan_layer(layer: KeptLayer, window: int, pools: tuple[int, ...], step: RolloutStep | None = None,
               on_block: Callable[[int], None] | None = None, budget: int = BLOCK_BYTES) -> LayerScan:  # fmt: skip
    """Every query block of `layer` once (`blocks.row_blocks` of `budget` bytes); `on_block(rows)` after each (progress).

    A block's logits and rows live in two buffers allocated once (`blocks.workspace`): the rows are the
    logits' softmax, and the summaries, pooled tiles and rollout step each read them once."""
    h, n = layer.heads, layer.query.size(1)
    sums = {name: torch.zeros(h, n) for name in NAMES}  # (H, N) each
    pooled = Pooled(h, layer.length, pools)
    work = workspace(layer, 2, budget)  # (2, c): logits, rows
    keys = torch.arange(layer.length, dtype=torch.float32, device=layer.query.device)  # (N,) key positions
    for q0, q1 in row_blocks(layer, budget):
        scores, lo = logits(layer, q0, q1, out=work[0])  # (H, b, k)
        p = torch.softmax(scores, dim=-1, out=work[1, : scores.numel()].view_as(scores))  # (H, b, k)
        for name, value in block_summaries(p, scores, keys, lo, int(layer.position(q0, q0 + 1)[0]), window, layer.causal).items():
            sums[name][:, q0:q1] = value.cpu()
        pooled.add(p, lo, q0)
        if step is not None:
            step.add(p, lo, q0)
        if on_block is not None:
            on_block(q1 - q0)
    return LayerScan(sums, {s: pooled.means(s) for s in pools}, {s: pooled.means(s, sink=False) for s in pools})


def exact_rows(layer: KeptLayer, queries: list[int], heads: list[int] | None) -> Tensor:
    """The exact attention rows of `queries` over every key: (h, m, N) float32 (zeros where masked)."""
    chosen = None if heads is None else torch.tensor(heads, device=layer.query.device)
    h = layer.heads if heads is None else len(heads)
    out = torch.zeros(h, len(queries), layer.length)  # (h, m, N)
    for i, q in enumerate(queries):
        p, lo = probabilities(layer, q, q + 1, chosen)  # (h, 1, k)
        out[:, i, lo : lo + p.size(2)] = p[:, 0].cpu()
    return out
