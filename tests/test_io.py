"""Atomic writes and appends on a full or read-only disk: one `WriteError` naming the file and the
cause, the old file untouched, no temporary left. Faults are injected at the fsync, the write and the
rename, and (where this machine lets the tests mount one) met for real on a tiny tmpfs."""

from __future__ import annotations

import errno
import os
import subprocess
from pathlib import Path

import numpy as np
import pytest

from attnkit.errors import WriteError
from attnkit.io import append_text, atomic_path, atomic_write_bytes, atomic_write_text, interruptible

CAUSES = [errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EACCES]


def _files(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


@pytest.mark.parametrize("code", CAUSES, ids=[errno.errorcode[c] for c in CAUSES])
def test_a_failed_fsync_keeps_the_old_file(code, tmp_path, full_disk):
    path = tmp_path / "best.json"
    path.write_text("old")
    full_disk.at_fsync(".best.json.", code=code)
    with pytest.raises(WriteError) as failed:
        atomic_write_text(path, "new")
    assert str(failed.value) == f"{path}: cannot write ({os.strerror(code)})"
    assert path.read_text() == "old" and _files(tmp_path) == ["best.json"]


def test_a_failed_write_or_rename_keeps_the_old_file(tmp_path, monkeypatch):
    path = tmp_path / "x.npy"
    path.write_bytes(b"old")

    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    with pytest.raises(WriteError, match=r"x.npy: cannot write \(No space left on device\)"):
        with atomic_path(path) as tmp, open(tmp, "wb") as f:
            np.save(f, np.zeros(3))
            full()  # as if the buffered write had hit the full disk
    monkeypatch.setattr(os, "replace", full)
    with pytest.raises(WriteError, match=r"x.npy: cannot write \(No space left on device\)"):
        atomic_write_bytes(path, b"new")
    assert path.read_bytes() == b"old" and _files(tmp_path) == ["x.npy"]


def test_a_failed_append_is_cut_off_again(tmp_path, full_disk):
    path = tmp_path / "metrics.jsonl"
    append_text(path, '{"step": 1}\n')
    full_disk.at_write("metrics.jsonl")  # half of the record is written, then the disk is full
    with pytest.raises(WriteError, match=r"metrics.jsonl: cannot write \(No space left on device\)"):
        append_text(path, '{"step": 2, "loss": 1.5}\n')
    assert full_disk.failed and path.read_text() == '{"step": 1}\n'


@pytest.fixture
def tiny_disk(tmp_path):
    """A 64 KiB tmpfs at tmp_path/disk (skipped where mounting is not allowed)."""
    disk = tmp_path / "disk"
    disk.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(disk)], capture_output=True, text=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.strip() or mounted.returncode}")
    yield disk
    subprocess.run(["umount", "-l", str(disk)], check=True)


def test_a_really_full_disk(tiny_disk):
    path = tiny_disk / "model.bin"
    atomic_write_bytes(path, b"old" * 1000)
    with pytest.raises(WriteError, match=r"model.bin: cannot write \(No space left on device\)"):
        atomic_write_bytes(path, b"x" * 200_000)
    assert path.read_bytes() == b"old" * 1000 and _files(tiny_disk) == ["model.bin"]
    with pytest.raises(WriteError, match=r"log: cannot write \(No space left on device\)"):
        append_text(tiny_disk / "log", "y" * 200_000)
    assert (tiny_disk / "log").read_text() == ""


def test_sigterm_in_an_interruptible_body_is_a_keyboard_interrupt_and_removes_the_temporary(tmp_path):
    import signal

    before = signal.getsignal(signal.SIGTERM)
    target = tmp_path / "a.json"
    with pytest.raises(KeyboardInterrupt, match="SIGTERM"), interruptible(), atomic_path(target) as tmp:
        tmp.write_text("half")
        os.kill(os.getpid(), signal.SIGTERM)
    assert list(tmp_path.iterdir()) == []  # neither the file nor its temporary
    assert signal.getsignal(signal.SIGTERM) is before


def test_a_written_file_has_the_permissions_of_a_plain_open(tmp_path):
    """mkstemp makes its file 0600; the file renamed into place gets what `open` gives (0666 less the umask)."""
    plain = tmp_path / "plain.txt"
    plain.write_text("x")
    atomic_write_text(tmp_path / "atomic.txt", "x")
    with atomic_path(tmp_path / "maps.npz") as tmp:
        np.savez(tmp, a=np.zeros(2))
    modes = {p.name: p.stat().st_mode & 0o777 for p in tmp_path.iterdir()}
    assert modes["atomic.txt"] == modes["maps.npz"] == modes["plain.txt"]
