"""The progress file of a resumable analysis command (`faithfulness`, `heads --importance`).

A JSONL file: a header (the command's format key and version, and the fingerprints of what the
figures depend on: the model's files, the data, the settings), then one record a line, each
appended whole as it is done (`io.append_text`). `read_progress` opens such a file for a run that
starts (again): it writes the header of a new file, cuts off a last line that a kill left without
its newline, and refuses, in one line, a file written for another model, data or settings.

Under torchrun a command splits its work across the ranks (`Shard`): rank r of N appends to its own
`NAME.rank<r>-of-<N>.jsonl` (`Shard.file`), resumable on its own, and reads the complete lines of the
folder's other progress files (`records_elsewhere`: other ranks', other world sizes', the one-process
file's), so that nothing done anywhere is done again; rank 0 then writes NAME.jsonl whole.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from attnkit.errors import AttnkitError
from attnkit.io import append_text, hash_file

FINGERPRINTS = (("another model", "model"), ("another data file", "data"), ("other settings", "settings"))  # (what a refusal names, header key)


@dataclass(frozen=True)
class Shard:
    """This process's share of a command's work under torchrun (a world of one by default): the items i with
    i % size == rank. `gather`: a value -> every rank's, in rank order, on rank 0 (None on the others);
    `broadcast`: rank 0's value on every rank (`train.distributed.World`'s, which this layer cannot import)."""

    rank: int = 0
    size: int = 1
    gather: Callable[[Any], list | None] = lambda value: [value]
    broadcast: Callable[[Any], Any] = lambda value: value

    def mine(self, items: Sequence) -> list:
        """This rank's items: items[rank], items[rank + size], ..."""
        return list(items[self.rank :: self.size])

    def file(self, name: str) -> str:
        """The progress file this rank appends to: `name` (importance.jsonl) for one process, else
        importance.rank<r>-of-<N>.jsonl."""
        stem, suffix = name.rsplit(".", 1)
        return name if self.size == 1 else f"{stem}.rank{self.rank}-of-{self.size}.{suffix}"

    def share(self, part: dict) -> dict:
        """Every rank's dict `part`, merged, on every rank."""
        parts = self.gather(part)
        return self.broadcast(None if parts is None else {k: v for p in parts for k, v in p.items()})


def model_fingerprint(files: Sequence[Path]) -> str:
    """The files that make a model (a run's run.json and checkpoint, a Hugging Face folder's): names, sizes, times."""
    h = hashlib.sha256()
    for f in sorted(files):
        st = f.stat()
        h.update(f"{f.name}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
    return h.hexdigest()


def data_fingerprint(path: str | Path) -> str:
    """sha256 of a data file's bytes."""
    h = hashlib.sha256()
    hash_file(h, path)
    return h.hexdigest()


def lines_fingerprint(lines: Iterable[str]) -> str:
    """sha256 of texts, one a line (texts given as arguments or on stdin have no file)."""
    h = hashlib.sha256()
    for line in lines:
        h.update(line.encode("utf-8") + b"\n")
    return h.hexdigest()


def read_progress(path: Path, expected: dict, what: str) -> list[dict]:
    """The records of the progress file `path` (`what` it is, for errors: "an examples file of attnkit
    faithfulness"), after checking its header against `expected`; a new file gets `expected` as its header.
    A last line without its newline (a kill during the append) is cut off the file.
    """
    if not path.exists():
        append_text(path, json.dumps(expected) + "\n")
        return []
    data = path.read_bytes()
    end = data.rfind(b"\n") + 1
    if end < len(data):
        os.truncate(path, end)  # a last line a kill cut short
    if not data[:end].strip():
        append_text(path, json.dumps(expected) + "\n")
        return []
    return parse_progress(path, data[:end], expected, what)


def parse_progress(path: Path, data: bytes, expected: dict, what: str) -> list[dict]:
    """The records of a progress file's complete lines `data`, after checking its header against `expected`.

    The header's first key is the format (its value the version); the others are those of `FINGERPRINTS`.
    """
    lines = data.decode("utf-8").splitlines()
    if not lines:
        return []
    try:
        found = json.loads(lines[0])
        records = [json.loads(line) for line in lines[1:]]
    except json.JSONDecodeError as e:
        raise AttnkitError(f"{path}: not {what} ({e.msg}); use another --out") from None
    fmt = next(iter(expected))
    if not isinstance(found, dict) or found.get(fmt) != expected[fmt]:
        raise AttnkitError(f"{path}: not {what}; use another --out")
    differ = [name for name, key in FINGERPRINTS if found.get(key) != expected[key]]
    if differ:
        raise AttnkitError(f"{path}: written for {' and '.join(differ)}; cannot resume: use another --out or delete the file")
    return records


def records_elsewhere(folder: Path, name: str, own: Path, expected: dict, what: str) -> list[dict]:
    """The records of `folder`'s other progress files of `name` (NAME.jsonl and every rank's of any world size),
    read as they are: another rank may be appending to its file, so a last line without its newline is left to it."""
    stem, suffix = name.rsplit(".", 1)
    found: list[dict] = []
    for path in sorted({*folder.glob(f"{stem}.rank*-of-*.{suffix}"), folder / name} - {own}):
        if path.exists():
            data = path.read_bytes()
            found += parse_progress(path, data[: data.rfind(b"\n") + 1], expected, what)
    return found
