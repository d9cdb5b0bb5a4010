"""The explorer page's records: the one road's records (`sources.record`) as the JSON the pages read.

`attnkit report`, the `/attention` page of `attnkit serve` and `attnkit.show` all draw what `page_records`
returns: per input the record of `viz.records` (docs/explorer.md) with `source` (the input), `text` (what
the model made of it: its output, class or prediction), the family's fields and n-best list (a run),
`maps`, one entry per kind of attention and per summary (`rollout`, `rollout_encoder`, `flow`, each one
layer of one head), each with its title and role, `note` where the source gives one (an attnkit
classifier's class and probabilities: its maps, the hops, are no output), and with attributions
(`--attribute`) `attribution`: the attributions of one output and their Kendall tau with each layer's
attention, rollout and flow (`sources.attribute`, `sources.agreement`).

So that a page of a 2,048-token input stays a file a browser opens, a page holds each (layer, head)
map as bytes (`viz.weights`), kept so from the moment the layer arrives (`sources.store.ByteStore`);
`max_cells` caps the weights of one page (one line says so, and `attnkit attention` writes them all,
exactly, into an npz).
"""

from __future__ import annotations

from collections.abc import Sequence

from attnkit.sources.options import AttentionOptions
from attnkit.sources.source import Source
from attnkit.sources.store import MAX_CELLS

__all__ = ["MAX_CELLS", "page_record", "page_records"]


def page_records(source: Source, lines: Sequence[str | None], options: AttentionOptions = AttentionOptions(), max_cells: int = MAX_CELLS) -> list[dict]:
    """The records the explorer page draws for `lines` (module docstring), numbered from 0."""
    from attnkit.sources.record import explain_inputs
    from attnkit.sources.store import ByteStore
    from attnkit.viz.records import records_json

    return records_json(explain_inputs(source, lines, options, lambda: ByteStore(source.name, max_cells)))


def page_record(source: Source, text: str | None, options: AttentionOptions = AttentionOptions(), max_cells: int = MAX_CELLS) -> dict:
    """The record of one input (`page_records`)."""
    return page_records(source, [text], options, max_cells)[0]
