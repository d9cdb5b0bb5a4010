"""The run-folder lock: one holder at a time, refused with the holder's pid, host and start time,
gone the moment its holder dies (even by SIGKILL); and `claim_new_run_folder` for new run folders."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from attnkit.artifacts.lock import LOCK_NAME, claim_new_run_folder, locked
from attnkit.errors import AttnkitError, CheckpointError, RunInUseError

HOLD = """\
import sys, time
from attnkit.artifacts.lock import locked
with locked(sys.argv[1], create=True):
    print("holding", flush=True)
    time.sleep(120)
"""
TRY = """\
import sys
from attnkit.artifacts.lock import locked
from attnkit.errors import RunInUseError
try:
    with locked(sys.argv[1]):
        print("acquired")
except RunInUseError as e:
    print(e)
"""


def _python(code: str, *args: str, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=60, **kwargs)


def test_the_holder_is_written_and_a_second_lock_is_refused(tmp_path: Path) -> None:
    run = tmp_path / "run"
    with locked(run, create=True):
        holder = json.loads((run / LOCK_NAME).read_text())
        assert holder["pid"] == os.getpid() and holder["host"] == socket.gethostname() and holder["started"]
        with pytest.raises(RunInUseError) as refused:  # flock locks an open file: this process is refused too
            with locked(run):
                pass
        assert str(refused.value).startswith(f"{run}: in use by pid {os.getpid()} on host {socket.gethostname()} (since ")
        other = _python(TRY, str(run))
        assert other.stdout.startswith(f"{run}: in use by pid {os.getpid()} on host "), other.stderr
    assert _python(TRY, str(run)).stdout == "acquired\n"  # released on leaving the block
    assert (run / LOCK_NAME).is_file()  # the file stays; the lock does not


def test_a_sigkilled_holder_holds_nothing(tmp_path: Path) -> None:
    run = tmp_path / "run"
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(run)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline() == "holding\n"
        with pytest.raises(RunInUseError, match=f"in use by pid {holder.pid} "):
            with locked(run):
                pass
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait(timeout=30)
        holder.stdout.close()
    with locked(run):  # at once: the kernel dropped the dead process's lock
        pass


def test_folders_that_cannot_be_locked(tmp_path: Path) -> None:
    with pytest.raises(CheckpointError, match="missing: no such run folder"):
        with locked(tmp_path / "missing"):
            pass
    assert not (tmp_path / "missing").exists()
    (tmp_path / "file").write_text("x")
    with pytest.raises(AttnkitError, match="file: exists and is not a folder"):
        with locked(tmp_path / "file", create=True):
            pass
    with pytest.raises(AttnkitError, match=r"file/run: cannot create the run folder \(Not a directory\)"):
        with locked(tmp_path / "file" / "run", create=True):
            pass


def test_claim_new_run_folder(tmp_path: Path) -> None:
    with claim_new_run_folder(tmp_path / "new") as new:
        (new / "config.yaml").write_text("x")
        assert _python(TRY, str(new)).stdout.startswith(f"{new}: in use by pid {os.getpid()} ")
    (tmp_path / "empty").mkdir()
    with claim_new_run_folder(tmp_path / "empty"):
        pass
    with claim_new_run_folder(tmp_path / "empty"):  # a lock file left by an earlier holder is no content
        pass
    with pytest.raises(AttnkitError, match="new: already exists and is not empty; choose a new folder"):
        with claim_new_run_folder(tmp_path / "new"):
            pass
    with locked(tmp_path / "busy", create=True):
        with pytest.raises(RunInUseError, match="busy: in use by pid"):
            with claim_new_run_folder(tmp_path / "busy"):
                pass


def test_a_failed_claim_removes_what_it_wrote(tmp_path: Path) -> None:
    for name, existed in (("created", False), ("existing", True)):
        folder = tmp_path / name
        if existed:
            folder.mkdir()
        with pytest.raises(OSError):
            with claim_new_run_folder(folder):
                (folder / "checkpoints").mkdir()
                (folder / "run.json").write_text("{}")
                raise OSError(28, "No space left on device")
        assert folder.exists() == existed and (not existed or not any(folder.iterdir()))


def test_a_folder_created_for_nothing_is_removed(tmp_path: Path) -> None:
    with pytest.raises(ValueError):  # e.g. training refused its data before writing anything
        with locked(tmp_path / "run", create=True):
            raise ValueError("bad data")
    assert not (tmp_path / "run").exists()
    with pytest.raises(ValueError):
        with locked(tmp_path / "run", create=True):
            (tmp_path / "run" / "config.yaml").write_text("x")
            raise ValueError("later")
    assert (tmp_path / "run" / "config.yaml").is_file()  # what was written stays (a run to resume or rerun)
