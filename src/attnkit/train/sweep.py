"""`attnkit sweep`: train each variant of a config for the same budget, one run folder each, and tabulate them.

A sweep folder `DIR` holds:
- `sweep.json`: what the sweep is (the base config's contents, shared overrides, budget, variants).
  A rerun must describe the same sweep; it is refused otherwise (rows of two sweeps never mix);
- `NAME/`: the run folder of each variant, written by the trainer as `attnkit train` writes one;
- `rows/NAME.json`: a finished variant's result (`sweep_table.row_result`), written once it trained its budget;
- `table.md`, `table.json`, `table.png`: the finished rows, rewritten after each row;
- `logs/NAME.log`: what each row's `attnkit train` printed, when rows run as separate processes (`jobs > 1`).

Resuming is rerunning the same command: rows with a result are skipped, a row whose run folder
holds a checkpoint resumes from it (`--resume`), and a row killed before its first checkpoint starts
again. With `jobs == 1` the rows train one after another in this process; with more, each row is an
`attnkit train` child process (in its own session, so a Ctrl-C reaches the sweep, which passes one
SIGTERM on to every running row: each checkpoints and stops, as `attnkit train` does). On Linux a
row's process also gets SIGTERM when the sweep itself dies, so a killed sweep leaves no orphan.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from attnkit import extras
from attnkit.artifacts.checkpoint import checkpoint_dirs, find_checkpoint
from attnkit.artifacts.lock import locked
from attnkit.config.load import read_yaml
from attnkit.config.schema import Metric, RunBase
from attnkit.config.sweep import Sweep, Variant
from attnkit.errors import ConfigError, TrainingError
from attnkit.families import load_config
from attnkit.io import atomic_write_text
from attnkit.progress import TrainProgress
from attnkit.train.loop import done, train
from attnkit.train.state import TrainState
from attnkit.train.sweep_table import row_result, summary, write_tables

log = logging.getLogger("attnkit")

Report = Callable[[str], None]  # one progress line per row event


@dataclass
class Outcome:
    """What `run_sweep` did: every finished row's result, and the signal that stopped it (if one did)."""

    rows: list[dict]
    interrupted: str | None = None


def describe(sweep: Sweep) -> dict:
    """The `sweep.json` record of `sweep` (the base config by content: an edited file is another sweep)."""
    return {
        "config": str(sweep.config),
        "base": read_yaml(sweep.config),
        "common": list(sweep.common),
        "budget": list(sweep.budget),
        "variants": [{"name": v.name, "overrides": list(v.overrides)} for v in sweep.variants],
    }


def _claim(sweep: Sweep, out: Path) -> None:
    """Write `sweep.json`, or check that the one there describes this sweep."""
    record, path = describe(sweep), out / "sweep.json"
    if path.is_file():
        held = json.loads(path.read_text(encoding="utf-8"))
        differ = [key for key in ("base", "common", "budget", "variants") if held.get(key) != record[key]]
        if differ:
            raise ConfigError(
                f"{out}: holds another sweep (its {', '.join(differ)} differ from this command's); "
                "rerun the command that started it to continue it, or choose another --out"
            )
        return
    atomic_write_text(path, json.dumps(record, indent=1) + "\n")


def _finished(run_dir: Path, run: RunBase) -> bool:
    """Whether the run's last checkpoint ends its whole budget (not a mid-run validation, not a signal's stop)."""
    if not checkpoint_dirs(run_dir):
        return False
    saved = json.loads((find_checkpoint(run_dir, "last") / "state.json").read_text(encoding="utf-8"))
    state = TrainState.from_dict(saved["train_state"])
    return state.interrupted is None and done(run, state)


def run_sweep(sweep: Sweep, out: str | Path, *, jobs: int = 1, data_dir: str | None = None, report: Report = print, progress: bool = True) -> Outcome:
    """Train every unfinished variant of `sweep` into `out/NAME` and write the tables; see the module docstring.

    Every variant's config is validated before anything trains, so a bad one is an error at once.

    Raises:
        ConfigError: a variant's config is invalid, or `out` holds another sweep.
        MissingExtra: a variant needs an optional package that is not installed.
        RunInUseError: another process holds `out` (or a row's folder).
        TrainingError: a row's process failed (its log is named).
    """
    out = Path(out)
    runs = {v.name: load_config(sweep.config, sweep.overrides(v)) for v in sweep.variants}
    for run in runs.values():  # a missing optional package is one line before the sweep folder is made
        extras.check(run.needs())
    with locked(out, create=True):
        _claim(sweep, out)
        metrics = type(next(iter(runs.values()))).METRICS  # one base config: one family
        results = {v.name: json.loads(p.read_text(encoding="utf-8")) for v in sweep.variants if (p := out / "rows" / f"{v.folder}.json").is_file()}
        todo = []
        for i, variant in enumerate(sweep.variants, 1):
            if variant.name in results:
                report(f"[{i}/{len(sweep.variants)}] {variant.name}: done before ({summary(results[variant.name], metrics)})")
            else:
                todo.append((i, variant))
        board = _Board(sweep, out, results, report, metrics)
        if jobs == 1:
            interrupted = _train_here(todo, runs, board, data_dir, progress)
        else:
            interrupted = _train_children(todo, runs, board, data_dir, jobs)
        board.write()
        return Outcome([results[v.name] for v in sweep.variants if v.name in results], interrupted)


class _Board:
    """The results so far: a row's start and end lines, its result file, and the tables after each row."""

    def __init__(self, sweep: Sweep, out: Path, results: dict[str, dict], report: Report, metrics: tuple[Metric, ...]) -> None:
        self.sweep, self.out, self.results, self.report, self.metrics = sweep, out, results, report, metrics

    def start(self, i: int, variant: Variant) -> Path:
        run_dir = self.out / variant.folder
        dirs = checkpoint_dirs(run_dir)
        how = f"resuming from step {int(dirs[-1].name.removeprefix('step_'))}" if dirs else "training"
        self.report(f"[{i}/{len(self.sweep.variants)}] {variant.name}: {how}")
        return run_dir

    def finish(self, i: int, variant: Variant) -> None:
        result = row_result(variant, self.out / variant.folder)
        atomic_write_text(self.out / "rows" / f"{variant.folder}.json", json.dumps(result, indent=1) + "\n")
        self.results[variant.name] = result
        self.report(f"[{i}/{len(self.sweep.variants)}] {variant.name}: {summary(result, self.metrics)}")
        self.write()

    def write(self) -> None:
        rows = [self.results[v.name] for v in self.sweep.variants if v.name in self.results]
        if rows:
            write_tables(self.out, describe(self.sweep), rows, self.metrics)


def _train_here(todo: list[tuple[int, Variant]], runs: dict[str, RunBase], board: _Board, data_dir: str | None, progress: bool) -> str | None:
    """Train the rows one after another in this process; returns the signal that stopped a row, if one did."""
    for i, variant in todo:
        run_dir = board.start(i, variant)
        resume = bool(checkpoint_dirs(run_dir))
        run = runs[variant.name]
        if progress:
            with TrainProgress(run) as bar:
                state = train(run, run_dir, resume=resume, data_dir=data_dir, on_event=bar.event)
        else:
            state = train(run, run_dir, resume=resume, data_dir=data_dir)
        if state.interrupted:
            board.report(f"stopped by {state.interrupted} in {variant.name} (checkpoint saved); rerun the same command to continue the sweep")
            return state.interrupted
        board.finish(i, variant)
    return None


def _die_with_parent() -> None:
    """In a row's process before it starts (Linux): the kernel sends it SIGTERM when the sweep dies."""
    import ctypes

    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # 1 = PR_SET_PDEATHSIG


def _launch(variant: Variant, run: RunBase, board: _Board, run_dir: Path, data_dir: str | None, jobs: int) -> tuple[subprocess.Popen, Path]:
    """Start `attnkit train` for one row, its output in `logs/NAME.log`; returns the process and the log."""
    overrides = list(board.sweep.overrides(variant))
    if run.train.threads is None:  # the cores shared between the rows
        overrides.append(f"train.threads={max(1, (os.cpu_count() or 1) // jobs)}")
    command = [sys.executable, "-m", "attnkit", "train", str(board.sweep.config), "--out", str(run_dir)]
    command += [arg for o in overrides for arg in ("--set", o)] + (["--data", data_dir] if data_dir else [])
    command += ["--resume"] if checkpoint_dirs(run_dir) else []
    log_path = board.out / "logs" / f"{variant.folder}.log"
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with open(log_path, "ab") as sink:
        process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=sink, stderr=subprocess.STDOUT, start_new_session=True,
                                   preexec_fn=_die_with_parent if sys.platform.startswith("linux") else None)  # fmt: skip
    return process, log_path


def _train_children(todo: list[tuple[int, Variant]], runs: dict[str, RunBase], board: _Board, data_dir: str | None, jobs: int) -> str | None:
    """Train up to `jobs` rows at once, each an `attnkit train` process; returns the signal that stopped the sweep, if one did."""
    running: dict[subprocess.Popen, tuple[int, Variant, Path]] = {}
    stop: list[str] = []

    def forward(signum: int, frame: object) -> None:
        stop.append(signal.Signals(signum).name)
        board.report(f"{stop[0]}: stopping the running rows (each writes a checkpoint)" if len(stop) == 1 else "aborting the running rows")
        for process in running:
            process.send_signal(signal.SIGTERM)

    previous = {s: signal.signal(s, forward) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        while running or (todo and not stop):
            while todo and len(running) < jobs and not stop:
                i, variant = todo.pop(0)
                run_dir = board.start(i, variant)
                process, log_path = _launch(variant, runs[variant.name], board, run_dir, data_dir, jobs)
                running[process] = (i, variant, log_path)
            time.sleep(0.2)
            for process in [p for p in running if p.poll() is not None]:
                i, variant, log_path = running.pop(process)
                if _finished(board.out / variant.folder, runs[variant.name]):
                    board.finish(i, variant)
                elif not stop:
                    for other in running:
                        other.send_signal(signal.SIGTERM)
                        other.wait()
                    raise TrainingError(f"{variant.name}: attnkit train exited with status {process.returncode} before its budget; see {log_path}")
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
    if stop:
        board.report(f"stopped by {stop[0]}; rerun the same command to continue the sweep")
    return stop[0] if stop else None
