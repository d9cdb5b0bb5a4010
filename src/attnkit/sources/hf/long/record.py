"""The page's record of a long document (`viz/templates/long-view.js` draws it; docs/explorer.md, "Long inputs").

A record as `viz.records` writes them (`schema`, `id`, `model`, `source`: the document's first
`EXCERPT` characters, `text`: its length) with `long`: `tokens` (N,), `layers` (1-based), `heads`,
`window`, `levels` (the pooled levels the page zooms through, coarsest first: those that cut the map
into more than one tile, else the finest), `pooled` (level -> `with` and `without` the sink, each
[layer][head] bytes as `viz.weights.packed` holds maps), `grids` (summary name -> [layer][head]
means) and, where rows were asked for, `rows` (`positions` and [layer][head] bytes of the (m, N) exact
rows); `document`, the id `attnkit serve` answers exact tiles for (None offline). The coarsest level
is always embedded; finer ones while every level so far holds at most `max_cells` cells (the page
asks a server for the others, and a report's zoom stops at the finest it holds).
"""

from __future__ import annotations

from attnkit.sources.hf.long.document import LongDocument
from attnkit.sources.hf.long.options import POOLS
from attnkit.viz.attention_view import SCHEMA
from attnkit.viz.weights import packed, quantize

EXCERPT = 300  # characters of the document a record's `source` shows


def levels(n: int) -> list[int]:
    """The pooled levels a page of n tokens zooms through, coarsest first."""
    return [s for s in sorted(POOLS, reverse=True) if -(-n // s) > 1] or [min(POOLS)]


def _packed(doc: LongDocument, sink: bool, s: int) -> dict:
    return packed([quantize(doc.pooled[sink][l][s].numpy()) for l in sorted(doc.kept)])


def long_record(doc: LongDocument, text: str, max_cells: int, document: str | None = None) -> dict:
    """The record of `doc` read from `text` (module docstring); `document`: its id in a server's memory."""
    n, layers = len(doc.tokens), sorted(doc.kept)
    zoom = levels(n)
    embedded, cells = [], 0
    for i, s in enumerate(zoom):
        cells += len(layers) * doc.heads * 2 * (-(-n // s)) ** 2
        if i and cells > max_cells:
            break
        embedded.append(s)
    long = {"document": document, "tokens": list(doc.tokens), "layers": layers, "heads": doc.heads, "window": doc.window, "levels": zoom,
            "pooled": {str(s): {"with": _packed(doc, True, s), "without": _packed(doc, False, s)} for s in embedded},
            "grids": {name: grid.double().round(decimals=4).tolist() for name, grid in doc.grids.items()}}  # fmt: skip
    if doc.rows:
        long["rows"] = {"positions": list(doc.rows), **packed([quantize(doc.row_maps[l].numpy()) for l in layers])}
    more = f" \u2026 ({len(text):,} characters)" if len(text) > EXCERPT else ""
    return {"schema": SCHEMA, "id": 0, "model": doc.model, "source": text[:EXCERPT] + more, "text": f"{n:,} tokens", "long": long}
