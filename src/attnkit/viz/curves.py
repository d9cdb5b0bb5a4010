"""Training curves from a run's `metrics.jsonl`, as `attnkit.train` appends it (`train/metrics_log.py`).

Each line is one JSON object: `kind` ("train": every `train.log_every` updates, with `loss`, `lr`,
the batch size and its seconds; "valid": every `train.eval_every` updates, with `loss` and the
family's validation metrics), `step` (updates so far) and `elapsed` (seconds of training and
validation so far). A `Curves` holds the panels drawn from them, each line against updates and
against minutes: the loss (train and valid), the learning rate, then each validation metric the
family declares (`RunBase.METRICS`) that the run logged. `attnkit plot --metrics` draws them with
matplotlib (`viz/curve_plot.py`); `attnkit report` and `serve` embed `Curves.to_json()` and draw it
with `templates/curves.js`.

A last line without its newline is being written (or was cut by a kill; `--resume` drops it) and is
left out; any other line that is not a metrics record is an error naming the file and the line. A
value that is not a finite number (a NaN loss) is left out of its line.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from attnkit.errors import DataError

if TYPE_CHECKING:
    from attnkit.config.schema import Metric

METRICS_FILE = "metrics.jsonl"
KINDS = ("train", "valid")


@dataclass(frozen=True)
class Line:
    """One kind's values of one key: `value[i]` after `step[i]` updates, `minutes[i]` minutes in."""

    label: str  # the record kind: "train" or "valid"
    step: list[int]
    minutes: list[float]
    value: list[float]


@dataclass(frozen=True)
class Panel:
    """One quantity (`key` in the records, shown as `label`) with a line per record kind that logs it."""

    key: str
    label: str
    lines: list[Line]


@dataclass(frozen=True)
class Curves:
    """The curves of one run: `name` (its folder's name), `path` (the metrics.jsonl read) and its panels."""

    name: str
    path: Path
    panels: list[Panel]

    def to_json(self) -> dict:
        """What the report embeds and `GET /v1/models/{name}/metrics` answers: only finite numbers, so valid JSON."""
        return {"name": self.name, "path": str(self.path), "panels": [asdict(p) for p in self.panels]}


def read_records(path: str | Path) -> list[dict]:
    """The records of a metrics.jsonl (DataError: missing, empty, or a line that is not a record)."""
    path = Path(path)
    text = path.read_text(encoding="utf-8") if path.is_file() else ""
    records = []
    for number, line in enumerate(text.splitlines(keepends=True), 1):
        if not line.endswith("\n") or not line.strip():  # a line being appended; a blank line
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as e:
            raise DataError(f"{path}, line {number}: not JSON ({e.msg} at column {e.colno})") from None
        if not isinstance(record, dict) or record.get("kind") not in KINDS or type(record.get("step")) is not int:
            raise DataError(f'{path}, line {number}: not a metrics record (a JSON object with "kind": "train" or "valid" and an integer "step")')
        records.append(record)
    if not records:
        raise DataError(f"{path}: no metrics yet (training writes a line every train.log_every updates)")
    return records


def _number(value) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) else None


def series(records: Iterable[dict], kind: str, key: str) -> Line:
    """The `key` values of the records of `kind` that log it as a finite number."""
    rows = [(r["step"], _number(r.get("elapsed", 0)) or 0.0, v) for r in records if r["kind"] == kind and (v := _number(r.get(key))) is not None]
    return Line(kind, [s for s, _, _ in rows], [round(e / 60, 4) for _, e, _ in rows], [v for _, _, v in rows])


def build_curves(name: str, path: Path, records: list[dict], metrics: Sequence[Metric] = ()) -> Curves:
    """The panels of `records`: loss (train, valid), learning rate, then each of `metrics` that was logged."""
    wanted = [("loss", "loss", KINDS), ("lr", "learning rate", ("train",)), *((m.key, m.label, ("valid",)) for m in metrics)]
    panels = []
    for key, label, kinds in wanted:
        lines = [line for kind in kinds if (line := series(records, kind, key)).step]
        if lines:
            panels.append(Panel(key, label, lines))
    if not panels:
        raise DataError(f"{path}: no loss, learning rate or validation metric to draw")
    return Curves(name, path, panels)


def run_curves(run_dir: str | Path, metrics: Sequence[Metric] = (), missing_ok: bool = False) -> Curves | None:
    """The curves of a run folder, named after it (`missing_ok`: None when it has no metrics yet)."""
    path = Path(run_dir) / METRICS_FILE
    if missing_ok and not (path.is_file() and path.stat().st_size):
        return None
    return build_curves(Path(run_dir).resolve().name, path, read_records(path), metrics)


def valid_points(records: Iterable[dict], keys: Sequence[str]) -> list[dict]:
    """One point per validation record that logs every one of `keys`: its step, minutes and those values."""
    return [{"step": r["step"], "minutes": r["elapsed"] / 60, **{k: r[k] for k in keys}} for r in records if r["kind"] == "valid" and all(k in r for k in keys)]
