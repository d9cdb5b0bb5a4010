"""Progress bars for the command line (tqdm on stderr). Library code reports through callbacks."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from tqdm import tqdm

from attnkit.config.schema import SHARED_METRICS, Metric, RunBase

LOSS = Metric("loss", "loss")


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
            self.bar = tqdm(total=self.total, unit="s" if self.by_time else "step", dynamic_ncols=True, desc="train", leave=True)
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
            self.bar, self.name = tqdm(total=total, unit="B", unit_scale=True, desc=name, leave=False), name
        self.bar.n = done
        self.bar.refresh()


@contextmanager
def counter(total: int, desc: str, unit: str = "it") -> Iterator[tqdm]:
    """A plain counting bar; call `.update(n)`. Shown only when stderr is a terminal: a log file or a
    pipe (`attnkit translate ... 2>log`) gets no carriage-return frames."""
    bar = tqdm(total=total, desc=desc, unit=unit, leave=False, dynamic_ncols=True, disable=None)
    try:
        yield bar
    finally:
        bar.close()
