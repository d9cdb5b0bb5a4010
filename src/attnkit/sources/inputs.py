"""`attnkit attention SOURCE --input FILE --out DIR`: every attention map of each line of FILE, one `.npz` per input.

Each non-blank line of FILE is one input (`inputs_of`), written through the opened source as `attnkit attention`
writes one (`sources.write_attention`) to `DIR/<line>.npz`, named by its line number (`000001.npz`). Each npz
appears whole or not at all (`io.atomic_path`), and its members carry no time, so the same input gives the
same bytes.

Resumable: `DIR/index.jsonl` (`sources.progress`) starts with a header (the fingerprints of the model's files,
of FILE and of the settings: `AttentionOptions` but for the memory budget, which changes no array), then holds
one line per input written (`{"line": n, "file": "000001.npz", ...}`: the summary `attnkit attention` prints),
appended whole once its npz is in place. A run started again with the same arguments writes only the inputs
the index lacks (an npz written just before a kill, its line not yet appended, is written again, to the same
bytes); a run with another model, file or settings into the same DIR is refused in one line. At the end the
index is written whole, in line order, so a resumed run's DIR equals an uninterrupted one's.

Under torchrun (`torchrun --nproc-per-node N -m attnkit attention SOURCE --input FILE --out DIR`), rank r writes
inputs r, r + N, r + 2N, ... and appends their lines to its own `index.rank<r>-of-<N>.jsonl` (resumable on its
own); rank 0 gathers the lines and writes `index.jsonl`. An input's arrays depend on that input alone, so DIR
holds the files one process writes, byte for byte when every process runs as many threads.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import asdict
from pathlib import Path

from attnkit.data.text import read_lines
from attnkit.errors import AttnkitError, DataError
from attnkit.io import append_text, atomic_write_text, remove_temporaries
from attnkit.sources.options import AttentionOptions
from attnkit.sources.progress import Shard, data_fingerprint, model_fingerprint, read_progress, records_elsewhere
from attnkit.sources.source import Source

INDEX = "index.jsonl"
FORMAT = 1  # the header's `attnkit_attention` version
WHAT = "an index of attnkit attention --input"
Input = tuple[int, str]  # (line number from 1, text)


def npz_name(line: int) -> str:
    """The file of the input on line `line` (from 1): 000001.npz."""
    return f"{line:06d}.npz"


def inputs_of(path: str | Path) -> list[Input]:
    """(line number, text) of each non-blank line of `path`: one line for a missing file, invalid UTF-8 or no input."""
    found = [(n, text) for n, text in enumerate(read_lines(path), 1) if text]
    if not found:
        raise DataError(f"{path}: no inputs (every line is blank)")
    return found


def header(opened: Source, data: str | Path, options: AttentionOptions) -> dict:
    """What the files depend on: the model's files, the input file, the settings (the memory budget aside)."""
    settings = json.loads(json.dumps({k: v for k, v in asdict(options).items() if k != "max_memory"}))  # as read back: tuples are lists
    return {"attnkit_attention": FORMAT, "model": model_fingerprint(opened.files()), "data": data_fingerprint(data), "settings": settings}


def output_folder(out: str | Path) -> Path:
    """DIR, made if missing; one line for a .npz name or a file."""
    out = Path(out)
    if out.suffix == ".npz" or (out.exists() and not out.is_dir()):
        raise AttnkitError(f"{out}: --input writes one .npz per line into a folder: give --out DIR")
    out.mkdir(parents=True, exist_ok=True)
    return out


def write_inputs(opened: Source, inputs: Sequence[Input], data: str | Path, out: Path, path: Path, records: dict[int, dict],
                 options: AttentionOptions, progress: Callable[[int, int], None]) -> None:  # fmt: skip
    """Write the npz of each of `inputs` that `records` (line -> its index line) lacks, appending its line to `path`."""
    from attnkit.sources import write_attention

    done = sum(n in records for n, _ in inputs)
    progress(done, len(inputs))
    for n, text in inputs:
        if n in records:
            continue
        try:
            summary = write_attention(opened, text, out / npz_name(n), options)
        except AttnkitError as e:
            raise type(e)(f"{data}, line {n}: {e}") from None
        records[n] = {"line": n, "file": npz_name(n), **{k: v for k, v in summary.items() if k != "out"}}
        append_text(path, json.dumps(records[n]) + "\n")
        done += 1
        progress(done, len(inputs))


def export_inputs(opened: Source, inputs: Sequence[Input], data: str | Path, out: str | Path, options: AttentionOptions,
                  shard: Shard = Shard(), progress: Callable[[int, int], None] = lambda done, total: None) -> dict | None:  # fmt: skip
    """Write each input's npz into OUT that no index of OUT holds (`inputs`: `inputs_of(data)`), then OUT/index.jsonl;
    returns what was written. `progress(done, total)` after each input. Under torchrun (`shard`) each rank writes its
    share; rank 0 writes the index and returns, the others return None (module docstring)."""
    out = output_folder(out)
    path, expected = out / shard.file(INDEX), header(opened, data, options)
    records = {r["line"]: r for r in read_progress(path, expected, WHAT) + records_elsewhere(out, INDEX, path, expected, WHAT)}
    records = {n: r for n, r in records.items() if (out / r["file"]).exists()}  # an npz deleted since: written again
    mine = shard.mine(inputs)
    remove_temporaries(out, {npz_name(n) for n, _ in mine} | ({INDEX} if shard.rank == 0 else set()))  # another rank's: its own
    write_inputs(opened, mine, data, out, path, records, options, progress)
    parts = shard.gather({n: records[n] for n, _ in mine})
    if parts is None:
        return None
    for part in parts:
        records.update(part)
    lines = [expected, *(records[n] for n, _ in inputs)]
    atomic_write_text(out / INDEX, "".join(json.dumps(line) + "\n" for line in lines))
    return {"out": str(out), "index": str(out / INDEX), "inputs": len(inputs)}
