"""The explorer page's record of one input, from an attnkit run or a Hugging Face model.

`attnkit report`, the `/attention` page of `attnkit serve`, `attnkit.show` and `attnkit plot --view`
all draw what `page_record` returns: the common record of the report (docs/explorer.md) with
`source` (the input), `text` (what the model made of it: its output, class or next token),
`maps`, one entry per kind of attention and per summary (`rollout`, `rollout_encoder`, `flow`, each
one layer of one head), each with its title and role (`viz.records.map_entry`: the kinds the run's family
declares, the core Transformer's, or, for a kind nobody declared, its name), and `note` where the source gives one (an attnkit classifier's class and
probabilities: its maps, the hops, are no output); with attributions (`--attribute`), `attribution`: the attributions of one
output and their Kendall tau with each layer's attention, rollout and flow (`build_attribution`,
`sources.agreement`). The maps come through the same `Collector` as `attnkit attention`'s npz,
into a `MemoryWriter` instead of a file.

So that a page of a 2,048-token input stays a file a browser opens, a page holds each (layer, head)
map as bytes: the weights divided by the map's largest weight, times 255, rounded (`scale` keeps
that largest weight; the views draw every map on its own scale anyway), base64 in the JSON. That is
one byte a weight, kept from the moment the layer arrives; `max_cells` caps the weights of one page
(one line says so, and `attnkit attention` writes them all, exactly, into an npz).
"""

from __future__ import annotations

import base64
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from attnkit.errors import AttnkitError
from attnkit.sources.options import METHODS, AttentionOptions
from attnkit.sources.source import Source
from attnkit.viz.attention_view import SUMMARY_KINDS, TRANSFORMER_KINDS, AttentionKind, kind_table, ordered
from attnkit.viz.records import map_entry

MAX_CELLS = 64 * 2**20  # weights a page may hold (64 MiB as bytes; about 85 MB of base64)
EXACT = ("attr/", "tau/")  # one output's attributions and their agreement with attention: small, kept as floats


@dataclass
class Quantized:
    """Maps (..., Tq, Tk) as bytes: weight ~= data / 255 * scale, one scale per map (its largest weight)."""

    data: np.ndarray  # uint8 (..., Tq, Tk)
    scale: np.ndarray  # float (...)


def quantize(weights: np.ndarray) -> Quantized:
    """Each (Tq, Tk) map of `weights` (..., Tq, Tk) to bytes on its own scale."""
    scale = np.asarray(weights.max(axis=(-2, -1)), dtype=np.float64)  # (...)
    scale[scale <= 0] = 1.0
    data = np.rint(weights / scale[..., None, None] * 255).clip(0, 255).astype(np.uint8)  # (..., Tq, Tk)
    return Quantized(data, scale)


class MemoryWriter:
    """An `NpzWriter` that keeps what it is given (maps quantized when `quantize`), up to `max_cells` weights."""

    def __init__(self, name: str, max_cells: int = MAX_CELLS, quantize: bool = True) -> None:
        self.name, self.max_cells, self.quantize = name, max_cells, quantize
        self.arrays: dict[str, Any] = {}
        self.names: list[str] = []
        self.cells = 0

    def add(self, name: str, array: np.ndarray | Sequence[str]) -> None:
        if isinstance(array, list | tuple):
            self.arrays[name] = [str(t) for t in array]
        else:
            array = np.asarray(array)
            if array.dtype.kind == "f" and array.ndim >= 2 and not name.startswith(EXACT):
                self.cells += array.size
                if self.cells > self.max_cells:
                    raise AttnkitError(f"{self.name}: the page would hold more than {self.max_cells:,} attention weights "
                                       "(a shorter input, --max-cells, or `attnkit attention` for an npz of them all)")  # fmt: skip
                self.arrays[name] = quantize(array) if self.quantize else array
            else:
                self.arrays[name] = array.tolist() if array.dtype.kind == "U" else array
        self.names.append(name)


def attention_kinds(source: Source) -> dict[str, AttentionKind]:
    """The kinds a source's maps may have, by name: the core Transformer's, then a run's family's own."""
    family_kinds = source.loaded.family.attention_kinds if source.kind == "run" else ()
    return kind_table([*TRANSFORMER_KINDS, *family_kinds])


def collect(source: Source, text: str | None, options: AttentionOptions, max_cells: int = MAX_CELLS, quantize: bool = True) -> tuple[dict, dict]:
    """(arrays by npz name, the summary) of one input through a source (`sources.source.open_source`)."""
    writer = MemoryWriter(source.name, max_cells, quantize)
    summary = source.write(text, writer, options)
    return writer.arrays, summary


def _pack(q: Quantized) -> dict:
    """(L, H, Tq, Tk) bytes -> the page's `scale` [L][H] and `data` [L][H] (base64)."""
    data = [[base64.b64encode(m.tobytes()).decode("ascii") for m in layer] for layer in q.data]
    return {"scale": q.scale.tolist(), "data": data}


def _summary_labels(arrays: dict, maps: dict, name: str) -> tuple[list[str], list[str]]:
    """(rows, cols) of a summary: the cross queries x the input for an encoder-decoder rollout, else the self kind's
    (for flow, the query rows it holds, `flow/rows`)."""
    if name == "rollout" and "cross" in maps and "rollout_encoder" in arrays:
        return maps["cross"]["rows"], maps["cross"]["cols"]
    own = next(maps[k] for k in ("encoder", "self") if k in maps)
    if name == "flow":
        return [own["rows"][i] for i in arrays["flow/rows"]], own["cols"]
    return own["rows"], own["cols"]


def build_maps(arrays: dict, kinds: dict[str, int], table: dict[str, AttentionKind] | None = None) -> dict:
    """The page's `maps` from quantized arrays: every kind's layers (in `table`'s order, then the kinds it does
    not know), then the summaries present."""
    maps = {}
    for kind in ordered((k for k in kinds if kinds[k]), table or {}):
        layers = [arrays[f"{kind.name}/layer{l}"] for l in range(1, kinds[kind.name] + 1)]
        stacked = Quantized(np.stack([q.data for q in layers]), np.stack([q.scale for q in layers]))  # (L, H, Tq, Tk)
        maps[kind.name] = map_entry(kind, arrays[f"{kind.name}/queries"], arrays[f"{kind.name}/keys"], _pack(stacked))
    for kind in (k for k in SUMMARY_KINDS if k.name in arrays):
        q = arrays[kind.name]
        rows, cols = _summary_labels(arrays, maps, kind.name)
        maps[kind.name] = map_entry(kind, rows, cols, _pack(Quantized(q.data[None, None], q.scale[None, None])))  # (1, 1, Tq, Tk)
    return maps


def _number(x: float) -> float | None:
    return None if math.isnan(x) else float(x)  # NaN is not JSON


def build_attribution(arrays: dict) -> dict | None:
    """The page's `attribution` of one output (`sources.agreement`), or None without attributions: `output`
    (what was scored), `row`, `tokens`, `scores` (method -> (S,)), `compared` (`names`, `rows` (K, S))
    and `tau` (method -> (K,), null where undefined)."""
    if "attr/output" not in arrays:
        return None
    methods = [n.removeprefix("attr/") for n in arrays if n.startswith("attr/") and n.removeprefix("attr/") in METHODS]
    entry = {"output": arrays["attr/output"][0], "row": int(arrays["attr/row"]) if "attr/row" in arrays else None,
             "tokens": arrays["tokens"], "scores": {m: [float(x) for x in arrays[f"attr/{m}"]] for m in methods}}  # fmt: skip
    if "attr/ig_relative_error" in arrays:
        entry["ig"] = {"steps": int(arrays["attr/ig_steps"]), "relative_error": float(arrays["attr/ig_relative_error"])}
    if "tau/names" in arrays:
        entry["compared"] = {"names": arrays["tau/names"], "rows": np.asarray(arrays["tau/rows"], np.float64).tolist()}
        entry["tau"] = {m: [_number(x) for x in arrays[f"tau/{m}"]] for m in methods}
    return entry


def page_record(source: Source, text: str | None, options: AttentionOptions = AttentionOptions(), max_cells: int = MAX_CELLS) -> dict:
    """The record the explorer page draws for one input (module docstring)."""
    arrays, summary = collect(source, text, options, max_cells)
    record = {"id": 0, "model": source.name, "source": text if text is not None else str(options.image),
              "text": summary.get("prediction", ""), "maps": build_maps(arrays, summary["kinds"], attention_kinds(source))}  # fmt: skip
    if "note" in summary:
        record["note"] = summary["note"]
    attribution = build_attribution(arrays)
    return record if attribution is None else {**record, "attribution": attribution}


def float_maps(arrays: dict, kinds: dict[str, int], table: dict[str, AttentionKind] | None = None) -> dict[str, dict]:
    """From arrays kept as floats (`collect(..., quantize=False)`): per kind and summary (as `build_maps`), its title,
    role, `rows`, `cols` and `layers` (L, H, Tq, Tk) float32 (`attnkit plot --view`)."""
    maps = {}
    for kind in ordered((k for k in kinds if kinds[k]), table or {}):
        layers = np.stack([arrays[f"{kind.name}/layer{l}"] for l in range(1, kinds[kind.name] + 1)])  # (L, H, Tq, Tk)
        maps[kind.name] = map_entry(kind, arrays[f"{kind.name}/queries"], arrays[f"{kind.name}/keys"], {"layers": layers})
    for kind in (k for k in SUMMARY_KINDS if k.name in arrays):
        rows, cols = _summary_labels(arrays, maps, kind.name)
        maps[kind.name] = map_entry(kind, rows, cols, {"layers": arrays[kind.name][None, None]})  # (1, 1, Tq, Tk)
    return maps
