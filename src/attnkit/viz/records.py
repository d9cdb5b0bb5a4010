"""The one serializer of the pages' JSON: an `ExplainedInput` -> the record the pages read.

A record (docs/explorer.md) is `schema` (`attention_view.SCHEMA`), `id`, `model` (the source's name),
`source` (the input), `text` (what the model made of it), `nbest` and `note` where the model has them,
the family's own fields (`ExplainedInput.fields`: what its renderer draws, a tree, an image), `maps`:
per kind, in the order the source gave them (its kinds, then the summaries),
`{"title", "role", "rows": [query tokens], "cols": [key tokens], ...}` with the weights as the source
kept them: `layers` [layer][head][row][col] (floats, rounded to 4 decimals) or bytes, `scale` and
`data` (`viz.weights`: pages of long inputs); and with attributions, `attribution` (`attribution_json`).
The pages draw every kind a record holds, one they do not know as a heatmap under its title.

Records written by 0.1.0 have no `schema` (read it as 1) and carry, for a translation or a parse, the
cross attention a second time as `attention`, which the pages never read; this version's page scripts
draw them as they are (tests/viz/test_record_schema.py), and a 0.1.0 page carries its own scripts.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from torch import Tensor

from attnkit.viz.attention_view import SCHEMA, AttentionView, ExplainedInput, OutputAttribution, Written
from attnkit.viz.weights import Quantized, packed


def rounded(weights: Tensor) -> list:
    """A map's weights as nested lists, rounded to 4 decimals."""
    return weights.double().round(decimals=4).tolist()


def weights_json(view: AttentionView) -> dict:
    """A view's weights as the source kept them: `layers` (L, H, Tq, Tk) nested lists, or bytes (`scale`, `data`)."""
    if any(isinstance(w, Written) for w in view.layers):
        raise ValueError(f"{view.kind}: the layers are in an npz file, not in memory")
    if view.layers and isinstance(view.layers[0], Quantized):
        return packed(view.layers)
    return {"layers": [rounded(w) for w in view.layers]}


def view_entry(view: AttentionView) -> dict:
    """A view's entry of `maps`: its title and role, its labels and its weights."""
    return {"title": view.title, "role": view.role, "rows": list(view.rows), "cols": list(view.cols), **weights_json(view)}


def _number(x: float) -> float | None:
    return None if math.isnan(x) else float(x)  # NaN is not JSON


def attribution_json(a: OutputAttribution) -> dict:
    """The page's `attribution`: `output` (what was scored), `row`, `tokens`, `scores` (method -> (S,)),
    `ig` (steps, relative error), `compared` (`names`, `rows` (K, S)) and `tau` (method -> (K,), null where undefined)."""
    entry = {"output": a.output, "row": a.row, "tokens": list(a.tokens), "scores": {m: [float(x) for x in s] for m, s in a.scores.items()}}
    if a.ig is not None:
        entry["ig"] = {"steps": int(a.ig["steps"]), "relative_error": float(a.ig["relative_error"])}
    if a.compared:
        entry["compared"] = {"names": list(a.compared), "rows": np.stack(list(a.compared.values())).astype(np.float64).tolist()}
        entry["tau"] = {m: [_number(x) for x in t] for m, t in a.tau.items()}
    return entry


def record_json(index: int, e: ExplainedInput) -> dict:
    """The record of one explained input (module docstring)."""
    out = {"schema": SCHEMA, "id": index, **({"model": e.model} if e.model is not None else {}), **e.fields, "source": e.source, "text": e.text}
    if e.nbest is not None:
        out["nbest"] = list(e.nbest)
    if e.shown_note:
        out["note"] = e.shown_note
    if e.views:
        out["maps"] = {v.kind: view_entry(v) for v in e.views}
    if e.attribution is not None:
        out["attribution"] = attribution_json(e.attribution)
    return out


def records_json(explained: Sequence[ExplainedInput]) -> list[dict]:
    """The records of a model's inputs, numbered from 0."""
    return [record_json(i, e) for i, e in enumerate(explained)]
