"""A long document read once, held in memory for its page: the kept queries and keys and what one scan gives.

`read_document` takes a text through a decoder opened by `export.open_model`, after the memory
guard (`budget.check`): one forward pass keeps every layer's post-rotary queries and keys (keys
at the key/value head count), then one scan per layer (`scan.scan_layer`) gives the pooled maps at
every level (`options.POOLS`), with and without the sink, and the per-query summaries, of which
the document keeps each layer's and head's mean (the grids of the npz's `sink`, `entropy`,
`distance`, `local`); and exact rows for the queries asked for. The page (`long.record`) draws
the pooled levels and the grids; `tiles` recomputes exact tiles from the kept layers; `attnkit
serve` holds documents in an LRU by their `nbytes` (`long.cache`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch
from torch import Tensor

from attnkit.progress import bar
from attnkit.sources.hf.load import HfModel
from attnkit.sources.hf.long import budget
from attnkit.sources.hf.long.blocks import KeptLayer
from attnkit.sources.hf.long.export import forward
from attnkit.sources.hf.long.options import DEFAULT_ROW, POOLS, resolve_rows
from attnkit.sources.hf.long.scan import exact_rows, scan_layer
from attnkit.sources.hf.long.summaries import NAMES


@dataclass
class LongDocument:
    """One document's kept layers (numbered from 1), pooled maps and summary grids."""

    model: str
    tokens: list[str]
    kept: dict[int, KeptLayer]
    pooled: dict[bool, dict[int, dict[int, Tensor]]]  # with the sink? -> layer -> level s -> (H, t, t)
    grids: dict[str, Tensor]  # summary name -> (L, H): the mean over queries
    window: int  # the `local` summary's window
    rows: list[int] = field(default_factory=list)  # exact rows asked for (query positions)
    row_maps: dict[int, Tensor] = field(default_factory=dict)  # layer -> (H, m, N) exact rows

    @property
    def heads(self) -> int:
        return next(iter(self.kept.values())).heads

    @property
    def nbytes(self) -> int:
        """What the document holds in memory: its queries and keys, pooled maps, grids and rows."""
        tensors = [t for k in self.kept.values() for t in (k.query, k.key)]
        tensors += [m for by_layer in self.pooled.values() for levels in by_layer.values() for m in levels.values()]
        tensors += [*self.grids.values(), *self.row_maps.values()]
        return sum(t.numel() * t.element_size() for t in tensors)


def kept_bytes(hf: HfModel, n: int) -> int:
    """The estimated bytes of a document of n tokens' kept queries and keys and pooled maps (`budget.estimate`)."""
    shape = budget.shape_of(hf.model)
    est = budget.estimate(shape, n, budget.Plan(shape.layers, 0, shape.heads))
    return est.kept + shape.layers * shape.heads * 2 * sum((-(-n // s)) ** 2 for s in POOLS) * 4


def read_ids(hf: HfModel, ids: torch.Tensor, tokens: list[str], window: int = 64, rows: tuple[str, ...] = (), max_memory: int | None = None) -> LongDocument:
    """The `LongDocument` of token ids (1, N) labelled `tokens`, with exact rows for `rows` (`options.resolve_rows`; () none)."""
    n = ids.size(1)
    shape = budget.shape_of(hf.model)
    chosen = resolve_rows(rows, n, DEFAULT_ROW[hf.arch]) if rows else []
    plan = budget.Plan(shape.layers, len(chosen), shape.heads)
    budget.check(hf.name, shape, n, plan, max_memory or budget.available_memory() // 2)
    kept = forward(hf, ids, None, None)
    pooled: dict[bool, dict[int, dict[int, Tensor]]] = {True: {}, False: {}}
    means: dict[str, dict[int, Tensor]] = {name: {} for name in NAMES}
    with bar(total=sum(k.query.size(1) for k in kept.values()), desc="long: layers", unit="row") as progress:
        for l, layer in sorted(kept.items()):
            scan = scan_layer(layer, window, POOLS, on_block=progress.update)
            pooled[True][l], pooled[False][l] = scan.pooled, scan.pooled_without_sink
            for name, values in scan.summaries.items():
                means[name][l] = values.mean(dim=-1)  # (H,)
    grids = {name: torch.stack([means[name][l] for l in sorted(kept)]) for name in NAMES}  # (L, H) each
    row_maps = {l: exact_rows(layer, chosen, None) for l, layer in kept.items()} if chosen else {}
    return LongDocument(hf.name, tokens, kept, pooled, grids, window, chosen, row_maps)


def read_document(hf: HfModel, text: str, window: int = 64, rows: tuple[str, ...] = (), max_memory: int | None = None,
                  truncate: bool = False) -> LongDocument:  # fmt: skip
    """The `LongDocument` of `text` (too long for the model's positions: one line, unless `truncate`)."""
    from attnkit.sources.hf.inputs import prepare
    from attnkit.sources.options import AttentionOptions

    prep = prepare(hf, text, AttentionOptions(truncate=truncate))
    return read_ids(hf, prep.inputs["input_ids"], prep.tokens, window, rows, max_memory)
