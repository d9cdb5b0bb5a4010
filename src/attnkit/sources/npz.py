"""A record as one `.npz` file (`attnkit attention --out`), its arrays written as they come.

An `.npz` is a zip of `.npy` files, as `numpy.savez` writes it; `numpy.load` reads it back. Writing
member by member means a layer's attention never waits in memory for the next one (`sources.store.NpzStore`
writes each layer as the model gives it); `write_record` then writes the rest of the record: per kind
`<kind>/queries` and `<kind>/keys`, `tokens` (and `target_tokens`, `output_tokens`, `grid`, `flow/rows`),
`note`, and with attributions `attr/<method>`, `attr/output`, `attr/row`, `attr/ig_steps`,
`attr/ig_relative_error`, `tau/names`, `tau/rows` and `tau/<method>` (`sources.agreement`); a layer it is
given in memory (a float record) it writes too. The file appears only when complete
(`attnkit.io.atomic_path`). Its members carry zip's earliest date, not the time of writing, so the same
record is the same bytes (a resumed `attention --input` equals an uninterrupted one). Files written by 0.1.0 have the same members and open as they are.
"""

from __future__ import annotations

import zipfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import numpy as np

from attnkit.errors import AttnkitError
from attnkit.io import atomic_path
from attnkit.viz.attention_view import ExplainedInput, OutputAttribution, Written


class NpzWriter:
    """Adds arrays to an open `.npz` (zip) file; `names` lists what was written."""

    def __init__(self, archive: zipfile.ZipFile, path: Path) -> None:
        self._zip, self.path, self.names = archive, path, []

    def add(self, name: str, array: np.ndarray | Sequence[str]) -> None:
        """Write `array` as member `name` (a list of strings becomes a unicode array)."""
        if name in self.names:
            raise AttnkitError(f"{self.path}: {name} written twice")
        array = np.asarray(array, dtype=np.str_) if isinstance(array, list | tuple) else np.asarray(array)
        with self._zip.open(zipfile.ZipInfo(f"{name}.npy"), "w", force_zip64=True) as f:  # dated 1980-01-01: a record, the same bytes
            np.lib.format.write_array(f, array, allow_pickle=False)
        self.names.append(name)


@contextmanager
def npz_writer(path: str | Path) -> Iterator[NpzWriter]:
    """An `NpzWriter` on a temporary file that becomes `path` when the block ends without error."""
    path = Path(path)
    if path.suffix != ".npz":
        raise AttnkitError(f"{path}: the output must be a .npz file")
    with atomic_path(path) as tmp, zipfile.ZipFile(tmp, "w", zipfile.ZIP_STORED, allowZip64=True) as archive:
        yield NpzWriter(archive, path)


def _attribution(writer: NpzWriter, a: OutputAttribution) -> dict:
    for method, scores in a.scores.items():
        writer.add(f"attr/{method}", scores)
    writer.add("attr/output", [a.output])
    if a.row is not None:
        writer.add("attr/row", np.int64(a.row))
    if a.compared:
        writer.add("tau/names", list(a.compared))
        writer.add("tau/rows", np.stack(list(a.compared.values())).astype(np.float32))  # (K, S)
        for method, tau in a.tau.items():
            writer.add(f"tau/{method}", tau)
    if a.ig is not None:
        writer.add("attr/ig_steps", np.int64(a.ig["steps"]))
        writer.add("attr/ig_relative_error", np.float64(a.ig["relative_error"]))
    return {"attributed": a.output, **({f"ig_{k}": v for k, v in a.ig.items()} if a.ig else {})}


def write_record(writer: NpzWriter, e: ExplainedInput) -> dict:
    """Write what `writer` does not hold yet of the record `e` (module docstring); returns the summary of `attnkit attention`."""
    kinds, summaries = {}, []
    for v in e.views:
        summary = v.role == "summary"
        for l, w in enumerate(v.layers, 1):
            if not isinstance(w, Written):
                writer.add(v.kind if summary else f"{v.kind}/layer{l}", np.asarray(w[0] if summary else w, dtype=np.float32))
        if summary:
            summaries.append(v.kind)
            continue
        kinds[v.kind] = len(v.layers)
        writer.add(f"{v.kind}/queries", v.rows)
        writer.add(f"{v.kind}/keys", v.cols)
    for name, value in e.sequences.items():
        writer.add(name, value)
    out = {"model": e.model, "kinds": kinds, "tokens": len(e.sequences.get("tokens", ())), "prediction": e.text}
    if "target_tokens" in e.sequences:
        out["target_tokens"] = len(e.sequences["target_tokens"])
    if e.shown_note is not None:
        writer.add("note", [e.shown_note])
        out["note"] = e.shown_note
    if e.attribution is not None:
        out.update(_attribution(writer, e.attribution))
    return {**out, "summaries": summaries}
