"""The one serializer of attention maps: `Explained` inputs -> the JSON records the pages read.

A record (docs/explorer.md) is `id`, `source` (the input), `text` (what the model made of it),
`nbest` and `note` where the model has them, the family's own fields (`Explained.fields`: what its
renderer draws, a tree, an image) and `maps`: per kind, in the order the model gave them,
`{"title", "role", "rows": [query tokens], "cols": [key tokens], ...}` with the weights either as
`layers` [layer][head][row][col] (rounded to 4 decimals: `report`, the family pages) or as bytes,
`scale` and `data` (`sources.page`: long inputs). The pages draw every kind a record holds, one
they do not know as a heatmap under its title.
"""

from __future__ import annotations

from collections.abc import Sequence

from torch import Tensor

from attnkit.viz.attention_view import AttentionKind, AttentionView, Explained


def rounded(weights: Tensor) -> list:
    """A map's weights as nested lists, rounded to 4 decimals."""
    return weights.double().round(decimals=4).tolist()


def map_entry(kind: AttentionKind, rows: Sequence[str], cols: Sequence[str], weights: dict) -> dict:
    """One kind's entry of `maps`: its title and role, its labels and `weights` (`layers`, or `scale` and `data`)."""
    return {"title": kind.title, "role": kind.role, "rows": list(rows), "cols": list(cols), **weights}


def view_entry(view: AttentionView) -> dict:
    """A view's entry of `maps`, its weights as `layers` (L, H, Tq, Tk) nested lists."""
    kind = AttentionKind(view.kind, view.title, view.axes, view.role)
    return map_entry(kind, view.rows, view.cols, {"layers": [rounded(w) for w in view.layers]})


def record_json(index: int, e: Explained) -> dict:
    """The record of one explained input (module docstring)."""
    out = {"id": index, **e.fields, "source": e.source, "text": e.text}
    if e.nbest is not None:
        out["nbest"] = list(e.nbest)
    note = e.note or next((v.note for v in e.views if v.note), None)
    if note:
        out["note"] = note
    if e.views:
        out["maps"] = {v.kind: view_entry(v) for v in e.views}
    return out


def records_json(explained: Sequence[Explained]) -> list[dict]:
    """The records of a model's inputs, numbered from 0."""
    return [record_json(i, e) for i, e in enumerate(explained)]
