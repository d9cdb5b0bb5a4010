"""`attnkit average`: average the last N checkpoints into a new run folder (Vaswani et al. sec. 6.1).

The new folder is claimed first (`artifacts/lock.py`): one that holds files or that another process
is writing is refused, and a failed write (e.g. a full disk) removes what was written.
"""

from __future__ import annotations

from pathlib import Path

from attnkit.artifacts.lock import claim_new_run_folder
from attnkit.errors import CheckpointError
from attnkit.runs import read_run, write_run
from attnkit.train.checkpoint import average_checkpoints, checkpoint_dirs, save_weights


def average_run(run_dir: str | Path, last: int, out: str | Path) -> Path:
    """Write `out` as a run folder whose one checkpoint is the mean of `run_dir`'s last `last`."""
    run_dir, out = Path(run_dir), Path(out)
    run, vocabs = read_run(run_dir)
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
        write_run(out, run, vocabs)
        step = int(chosen[-1].name.removeprefix("step_"))
        save_weights(out, step, weights, {"averaged_from": [str(p) for p in chosen]})
    return out
