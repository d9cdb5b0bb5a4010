"""Progress bars for the command line: tqdm on stderr, opened only through `bar` (or `counter`).

On a terminal a bar redraws itself in place; when stderr is a file or a pipe (`attnkit train ... 2>log`)
it writes plain lines instead, no carriage returns: one every `TQDM_MININTERVAL` seconds (default
`LINE_SECONDS`) and a last one when it closes, and none at all for a step shorter than that. Library
code reports through callbacks, except the steps inside training (data preparation, features,
validation decoding), which open a `counter` themselves.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from tqdm import tqdm

from attnkit.config.schema import SHARED_METRICS, Metric, RunBase

LOSS = Metric("loss", "loss")
Bar = tqdm  # what `bar` and `counter` give, for the annotations of code that a bar is handed to
LINE_SECONDS = 10.0  # seconds between the plain lines of a bar when stderr is not a terminal


class LineBar(tqdm):
    """tqdm writing whole lines, at most one every `interval` seconds, and a last one on closing if the
    step lasted that long: for a log file or a pipe, which carriage-return frames would litter."""

    def __init__(self, *args: Any, interval: float, **kwargs: Any) -> None:
        self.interval = interval
        self.lines, self.line_n = 0, None
        super().__init__(*args, **kwargs)
        self.last_line = self.start_t

    def display(self, msg: str | None = None, pos: int | None = None) -> bool:
        now = self._time()
        if now - getattr(self, "last_line", now) >= self.interval:
            self._line(now)
        return True

    def clear(self, nolock: bool = False) -> None:  # nothing is drawn in place, so nothing to clear
        pass

    def close(self) -> None:
        if self.disable:
            return
        if (self.lines or self._time() - self.start_t >= self.interval) and self.n != self.line_n:  # the last count, once
            self._line(self._time())
        self.disable = True
        self._decr_instances(self)

    def _line(self, now: float) -> None:
        self.fp.write(self.__str__().strip() + "\n")
        self.fp.flush()
        self.last_line, self.lines, self.line_n = now, self.lines + 1, self.n


def bar(total: float | None = None, desc: str = "", unit: str = "it", leave: bool = False, **kwargs: Any) -> tqdm:
    """A progress bar on stderr: redrawn in place on a terminal, plain lines otherwise (see the module)."""
    if sys.stderr.isatty():
        return tqdm(total=total, desc=desc, unit=unit, leave=leave, dynamic_ncols=True, **kwargs)
    interval = float(os.environ.get("TQDM_MININTERVAL", LINE_SECONDS))
    return LineBar(total=total, desc=desc, unit=unit, leave=leave, interval=interval, ncols=0, file=sys.stderr, **kwargs)


class TrainProgress:
    """A training bar over steps (max_steps) or minutes (max_minutes), with loss, lr and tokens/s (examples/s).

    A validation line shows the loss, the run family's metrics (`RunBase.METRICS`) and the shared ones.
    """

    def __init__(self, run: RunBase) -> None:
        t = run.train
        self.metrics: tuple[Metric, ...] = (LOSS, *SHARED_METRICS, *type(run).METRICS)
        self.by_time = t.max_steps is None and t.max_minutes is not None
        self.total = round(60 * t.max_minutes) if self.by_time else t.max_steps
        self.bar: tqdm | None = None  # shown from the first update: an error before it prints one line only
        self.tokens = 0
        self.seconds = 0.0
        self.valid = ""

    def __enter__(self) -> TrainProgress:
        return self

    def __exit__(self, *exc) -> None:
        if self.bar is not None:
            self.bar.close()

    def event(self, kind: str, state: Any, info: dict) -> None:
        if self.bar is None:
            self.bar = bar(total=self.total, unit="s" if self.by_time else "step", desc="train", leave=True)
        if kind == "valid":
            self.valid = " ".join(f"{m.key} {m.show(info[m.key])}" for m in self.metrics if m.key in info)
            self.bar.write(f"step {state.step}: valid {self.valid}")
            return
        self.unit = "ex/s" if "examples" in info else "tok/s"
        self.tokens += info.get("tokens", info.get("examples", 0))
        self.seconds += info["seconds"]
        self.bar.n = min(round(state.elapsed), self.bar.total) if self.by_time else state.step
        loss = "nan" if info["loss"] is None else f"{info['loss']:.3f}"
        self.bar.set_postfix_str(f"loss {loss} lr {info['lr']:.2e} {self.unit} {self.tokens / max(self.seconds, 1e-9):,.0f}", refresh=False)
        self.bar.refresh()


class DownloadProgress:
    """A byte-count bar per downloaded file."""

    def __init__(self) -> None:
        self.bar: tqdm | None = None
        self.name = ""

    def __enter__(self) -> DownloadProgress:
        return self

    def __exit__(self, *exc) -> None:
        if self.bar is not None:
            self.bar.close()

    def update(self, name: str, done: int, total: int | None) -> None:
        if name != self.name:
            if self.bar is not None:
                self.bar.close()
            self.bar, self.name = bar(total=total, desc=name, unit="B", unit_scale=True), name
        self.bar.n = done
        self.bar.refresh()


@contextmanager
def counter(total: int | None, desc: str, unit: str = "it") -> Iterator[tqdm]:
    """A counting `bar`, closed on leaving the block; call `.update(n)`."""
    shown = bar(total=total, desc=desc, unit=unit)
    try:
        yield shown
    finally:
        shown.close()


def moves(shown: tqdm) -> Callable[[int, int], None]:
    """The `progress(done, total)` callback of a library function (`faithfulness`, `attention --input`) that moves `shown`."""

    def progress(done: int, total: int) -> None:
        shown.total = total
        shown.update(done - shown.n)

    return progress
