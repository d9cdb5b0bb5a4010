"""`attnkit average`: average the last N checkpoints into a new run folder (Vaswani et al. sec. 6.1).

The new folder gets the run's files (config.yaml, run.json, tokenizer models) copied as they are,
so averaging works the same for every model family.
The new folder is claimed first (`artifacts/lock.py`): one that holds files or that another process
is writing is refused, and a failed write (e.g. a full disk) removes what was written.
"""

from __future__ import annotations

from pathlib import Path

from attnkit.artifacts.checkpoint import average_checkpoints, checkpoint_dirs, save_weights
from attnkit.artifacts.lock import claim_new_run_folder
from attnkit.errors import CheckpointError
from attnkit.io import atomic_write_bytes

RUN_LOGS = {"metrics.jsonl", "best.json"}  # the training history stays with the trained run


def copy_run_files(run_dir: Path, out: Path) -> None:
    """Copy what describes the model (not its checkpoints or training logs) from `run_dir` to `out`."""
    if not (run_dir / "run.json").is_file():
        raise CheckpointError(f"{run_dir}: not a run folder (no run.json)")
    out.mkdir(parents=True, exist_ok=True)
    for path in sorted(run_dir.iterdir()):
        if path.is_file() and not path.name.startswith(".") and path.name not in RUN_LOGS:
            atomic_write_bytes(out / path.name, path.read_bytes())


def average_run(run_dir: str | Path, last: int, out: str | Path) -> Path:
    """Write `out` as a run folder whose one checkpoint is the mean of `run_dir`'s last `last`."""
    run_dir, out = Path(run_dir), Path(out)
    if not run_dir.is_dir():
        raise CheckpointError(f"{run_dir}: no such run folder")
    dirs = checkpoint_dirs(run_dir)
    if last < 1:
        raise CheckpointError(f"--last must be at least 1 (got {last})")
    if len(dirs) < last:
        raise CheckpointError(f"{run_dir}: asked to average the last {last} checkpoints but it has {len(dirs)}")
    if out.resolve() == run_dir.resolve():
        raise CheckpointError(f"{out}: the output folder must differ from the run folder")
    chosen = dirs[-last:]
    with claim_new_run_folder(out):
        weights = average_checkpoints(chosen)
        copy_run_files(run_dir, out)
        step = int(chosen[-1].name.removeprefix("step_"))
        save_weights(out, step, weights, {"averaged_from": [str(p) for p in chosen]})
    return out
