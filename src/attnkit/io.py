"""Atomic writes: temp file (or folder) in the same folder, fsync, rename. Nothing is ever half-written.

The one place that writes files and folders atomically: `atomic_path` / `atomic_write_text` /
`atomic_write_bytes` for files, `atomic_dir` for folders (checkpoints, prepared data). A process
killed mid-write (SIGKILL, power loss) leaves only its temporary, `.NAME.XXXXXXXX.tmp` (folders:
`PREFIX NAME-PID`), which `remove_temporaries` (or the folder's owner) deletes once the folder's one
writer starts again. A write that fails (disk full, quota, read-only, permission) removes its
temporary, leaves the old file or folder as it was and raises one `WriteError` naming the file and
the cause.

`interruptible` makes SIGTERM end a command as SIGINT does (a `KeyboardInterrupt`), so that the
writes in flight remove their temporaries on the way out, as they do on Ctrl-C.
"""

from __future__ import annotations

import os
import shutil
import signal
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from attnkit.errors import AttnkitError, DataError, WriteError

TMP_SUFFIX = ".tmp"
UMASK = os.umask(0o022)  # read once, at import (os.umask can only be read by setting it)
os.umask(UMASK)


@contextmanager
def atomic_path(path: str | Path) -> Iterator[Path]:
    """Yield a temp path beside `path`; on success it is fsynced and renamed onto `path`, with the
    permissions a plain `open(path, "w")` would give it (0666 less the umask).

    On any error the temp file is removed and `path` is left as it was; an `OSError` while writing,
    fsyncing or renaming becomes a `WriteError` naming `path`.
    """
    path = Path(path)
    if path.is_dir():
        raise AttnkitError(f"{path}: is a directory, expected a file path")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=TMP_SUFFIX, dir=path.parent)
        os.fchmod(fd, 0o666 & ~UMASK)  # mkstemp's 0600 would leave the file unreadable to others; open() gives 0666 less the umask
    except OSError as e:
        raise write_error(path, e) from None
    os.close(fd)
    tmp_path = Path(tmp)
    try:
        yield tmp_path
        with open(tmp_path, "rb+") as f:
            os.fsync(f.fileno())
        os.replace(tmp_path, path)
    except OSError as e:
        tmp_path.unlink(missing_ok=True)
        raise write_error(path, e) from None
    except BaseException:
        tmp_path.unlink(missing_ok=True)
        raise
    _fsync_dir(path.parent)


@contextmanager
def atomic_dir(final: Path, tmp_prefix: str) -> Iterator[Path]:
    """Yield an empty temp folder beside `final`; on success its files are fsynced and it replaces
    `final` (an existing `final` is removed first). On any error the temp folder is deleted; an
    `OSError` becomes a `WriteError` naming the file inside `final` that failed (or `final`)."""
    tmp = final.with_name(f"{tmp_prefix}{final.name}-{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        tmp.mkdir(parents=True)
        yield tmp
        for f in tmp.iterdir():
            with open(f, "rb") as fh:
                os.fsync(fh.fileno())
        _fsync_dir(tmp)
        if final.exists():
            remove_dir(final, tmp_prefix)
        os.replace(tmp, final)
    except OSError as e:
        shutil.rmtree(tmp, ignore_errors=True)
        inside = e.filename is not None and Path(e.filename).parent == tmp
        raise write_error(final / Path(e.filename).name if inside else final, e) from None
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    _fsync_dir(final.parent)


def remove_dir(path: Path, tmp_prefix: str = ".tmp-") -> None:
    """Delete a folder safely: rename it to a temporary name (atomic), then delete that."""
    doomed = path.with_name(f"{tmp_prefix}old-{path.name}-{os.getpid()}")
    os.replace(path, doomed)
    _fsync_dir(path.parent)
    shutil.rmtree(doomed)


@contextmanager
def interruptible() -> Iterator[None]:
    """In the body, SIGTERM raises `KeyboardInterrupt` (as SIGINT does); the old handler is restored after.
    Outside the main thread (where no handler can be set) the body runs as it is."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt(signal.Signals(signum).name)

    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def write_error(path: str | Path, error: OSError) -> WriteError:
    """The one-line error for a failed write of `path`: `PATH: cannot write (No space left on device)`."""
    cause = os.strerror(error.errno) if error.errno else str(error)
    return WriteError(f"{path}: cannot write ({cause})")


def append_text(path: str | Path, text: str) -> None:
    """Append `text` to `path` whole or not at all: a failed write is cut off again (`WriteError`)."""
    data = text.encode("utf-8")
    try:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    except OSError as e:
        raise write_error(path, e) from None
    try:
        start = os.lseek(fd, 0, os.SEEK_END)
        try:
            done = 0
            while done < len(data):
                done += os.write(fd, data[done:])
        except OSError as e:
            os.ftruncate(fd, start)  # frees space, so it works on a full disk
            raise write_error(path, e) from None
    finally:
        os.close(fd)


def remove_temporaries(folder: str | Path, names: set[str] | None = None) -> list[Path]:
    """Delete the temporaries `atomic_path` left in `folder` (`.NAME.XXXXXXXX.tmp`), of every file or of the files
    `names` only (call it only as those files' one writer: another writer's are left to it)."""
    stale = [p for p in Path(folder).glob(f".*{TMP_SUFFIX}") if p.is_file()]
    if names is not None:
        stale = [p for p in stale if p.name[1 : -len(TMP_SUFFIX)].rsplit(".", 1)[0] in names]
    for path in stale:
        path.unlink(missing_ok=True)
    return stale


def _fsync_dir(folder: Path) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def hash_file(digest, path: str | Path) -> None:
    """Feed the bytes of the file `path` to `digest` (a hashlib object), 1 MiB at a time.

    Raises:
        DataError: the file cannot be read.
    """
    try:
        with open(path, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                digest.update(block)
    except OSError as e:
        raise DataError(f"{path}: cannot read ({e.strerror or e})") from None


def atomic_write_text(path: str | Path, text: str) -> None:
    with atomic_path(path) as tmp:
        tmp.write_text(text, encoding="utf-8")


def atomic_write_bytes(path: str | Path, data: bytes) -> None:
    with atomic_path(path) as tmp:
        tmp.write_bytes(data)
