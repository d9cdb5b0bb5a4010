"""One owner per run folder: an exclusive `flock` on `RUN/.lock`, which the kernel drops when its holder dies.

`train` (fresh or `--resume`; under torchrun, rank 0 for the whole job) holds the lock while it runs,
and `claim_new_run_folder` holds it while a command such as `average` writes a new run folder, so two
processes never write one folder: the second is refused with one line naming the folder and the
holder (pid, host, start time, from the lock file). The lock file stays in the folder; a process that
was killed (even with SIGKILL) holds nothing, so its run can be resumed at once. `flock` locks one
open file, not one process: a second `locked()` on the same folder in the same process is refused too.
Not `filelock`: its native lock writes no holder into the file (docs/design/libraries.md).
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import socket
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from attnkit.errors import AttnkitError, CheckpointError, RunInUseError

LOCK_NAME = ".lock"


@contextmanager
def locked(run_dir: str | Path, *, create: bool = False) -> Iterator[Path]:
    """Hold the exclusive lock on `run_dir` for the body (`create`: make the folder if missing; if
    the body fails before it wrote anything there, the folder is removed again).

    Raises:
        RunInUseError: another process (or another `locked` of this one) holds it.
        AttnkitError: the folder is missing (`create=False`), or cannot be created or locked.
    """
    run_dir = Path(run_dir)
    created = create and not run_dir.exists()
    fd = _acquire(run_dir, create)
    try:
        yield run_dir
    except BaseException:
        if created and run_dir.is_dir() and [p.name for p in run_dir.iterdir()] == [LOCK_NAME]:
            _remove_contents(run_dir, and_folder=True)
        raise
    finally:
        os.close(fd)  # releases the lock


@contextmanager
def claim_new_run_folder(path: str | Path) -> Iterator[Path]:
    """Hold `path` as a new run folder for the body: created if missing, refused if it holds files
    (a lock file left by an earlier holder aside) or another process holds it. If the body fails,
    what it wrote is removed again, so a failed command leaves no partial run folder."""
    path = Path(path)
    created = not path.exists()
    with locked(path, create=True):
        if any(p.name != LOCK_NAME for p in path.iterdir()):
            raise AttnkitError(f"{path}: already exists and is not empty; choose a new folder")
        try:
            yield path
        except BaseException:
            _remove_contents(path, and_folder=created)
            raise


def _remove_contents(folder: Path, and_folder: bool) -> None:
    if and_folder:
        shutil.rmtree(folder, ignore_errors=True)
        return
    for p in folder.iterdir():
        if p.is_dir() and not p.is_symlink():
            shutil.rmtree(p, ignore_errors=True)
        else:
            p.unlink(missing_ok=True)


def _acquire(run_dir: Path, create: bool) -> int:
    """Open and lock `RUN/.lock`, write this process into it and return its descriptor."""
    if not run_dir.is_dir():
        if run_dir.exists():
            raise AttnkitError(f"{run_dir}: exists and is not a folder")
        if not create:
            raise CheckpointError(f"{run_dir}: no such run folder")
        try:
            run_dir.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise AttnkitError(f"{run_dir}: cannot create the run folder ({os.strerror(e.errno) if e.errno else e})") from None
    path = run_dir / LOCK_NAME
    while True:
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as e:
            raise AttnkitError(f"{path}: cannot open the run folder's lock ({os.strerror(e.errno) if e.errno else e})") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise RunInUseError(f"{run_dir}: in use by {_holder(path)}; wait for it to end (or stop it), or choose another folder") from None
        if _same_file(fd, path):  # not a lock file that its holder deleted (with its folder) meanwhile
            break
        os.close(fd)
    _write_holder(fd)
    return fd


def _same_file(fd: int, path: Path) -> bool:
    try:
        now = path.stat()
    except FileNotFoundError:
        return False
    held = os.fstat(fd)
    return (held.st_dev, held.st_ino) == (now.st_dev, now.st_ino)


def _write_holder(fd: int) -> None:
    """Write who holds the lock, for the message a refused process prints (best effort: on a full
    disk the lock holds all the same)."""
    holder = {"pid": os.getpid(), "host": socket.gethostname(), "started": time.strftime("%Y-%m-%d %H:%M:%S %z")}
    try:
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps(holder).encode(), 0)
    except OSError:
        pass


def _holder(path: Path) -> str:
    """`pid 123 on host x (since 2026-12-01 10:00:00 +0000)`, from the lock file."""
    try:
        holder = json.loads(path.read_text(encoding="utf-8"))
        return f"pid {holder['pid']} on host {holder['host']} (since {holder['started']})"
    except (OSError, ValueError, KeyError, TypeError):
        return "another process"
