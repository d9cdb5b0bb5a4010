"""`attnkit data fetch multi30k`: download (or copy) Multi30k task 1 and verify every file.

Multi30k (Elliott et al., 2016): English image descriptions with German, French and Czech
translations, parallel by line. Files come from the ``multi30k/dataset`` GitHub repository at a
fixed commit and must match the sha256 values below (from ``shared/data/README.md``).

`fetch_file` (one verified transfer through a ``.part`` file) and `file_digest` serve every
corpus (`attnkit.families.translation.data.wmt14` too).
"""

from __future__ import annotations

import hashlib
import http.client
import logging
import os
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

from attnkit.errors import DataError

logger = logging.getLogger("attnkit")

MULTI30K_COMMIT = "a3d2e0d26b56f3846f66a952536ffed4e401d05a"
MULTI30K_URL = f"https://github.com/multi30k/dataset/raw/{MULTI30K_COMMIT}/data/task1/raw"
MULTI30K_SHA256 = {
    "test_2016_flickr.cs.gz": "200a4a74cc9560f051924abb9803be008d1908d77f747e9141aeb86dfd2797f1",
    "test_2016_flickr.de.gz": "9204244e408ccb38d2a55cfcd344df15005fc42a07a6e55ca6c52b6ababb8cc8",
    "test_2016_flickr.en.gz": "611d361c6334bc7246101d48097c13cf5c4413c5befc793cc629934359d532d9",
    "test_2016_flickr.fr.gz": "6d326e188d259fb1d04ac19eae3af956559b3a0b93d7635e56c90987c40c8b90",
    "train.cs.gz": "a65adb8b32e3bc664f21ecba7a6e7f6950fd1f405e135f7c312faabdb6255077",
    "train.de.gz": "726e39b2fa9eb9ffb6dc763fb35a179f80fae06ffc5d28b6ace5faa883de28a6",
    "train.en.gz": "d79cfa999dd4c51d2cb42499b6796d5a882c3a8a961923c25a898c90f8bbd56f",
    "train.fr.gz": "622e75069e9f4c577425c4f277116ce66e63a2401c0a2312d90073cb12379a3c",
    "val.cs.gz": "b63226e05c4bd5dd6a42897d74b86a1b9d2c31498252c572b1ea7f7996927fcc",
    "val.de.gz": "f0cba2f995189cf5770f29a8a9a537a3ad3f51657ad873405082ff6863a5e75a",
    "val.en.gz": "14f7d25ddd868909a9213e361768460edcacdd6ab9d1e77b92560dc10c10dc28",
    "val.fr.gz": "ca3106f1a72390591d25f6c45cb4cd39dec4cd3f123e099748a3ce5256c160e9",
}
TIMEOUT_S = 60
_CHUNK = 1 << 16

Progress = Callable[[str, int, int | None], None]  # (file name, bytes done, bytes total or None)
Checksum = tuple[str, str]  # (hashlib algorithm, "sha256" or "md5"; its hex digest)


def fetch_multi30k(
    dest: str | Path,
    *,
    from_dir: str | Path | None = None,
    langs: Sequence[str] = ("en", "de", "fr", "cs"),
    splits: Sequence[str] = ("train", "val", "test_2016_flickr"),
    progress: Progress | None = None,
    base_url: str = MULTI30K_URL,
) -> list[Path]:
    """Put verified Multi30k files ``{split}.{lang}.gz`` into ``dest``.

    Files already in ``dest`` with the right sha256 are kept. Others are downloaded (or copied
    from ``from_dir``) to ``NAME.part``, checked, then renamed; a failed file leaves no trace.

    Args:
        dest: Folder to fill (created if missing).
        from_dir: Copy from this folder instead of downloading.
        langs: Languages among en, de, fr, cs.
        splits: Splits among train, val, test_2016_flickr.
        progress: Called as ``progress(name, bytes_done, bytes_total)`` while a file transfers
            (``bytes_total`` is None if the server does not say).
        base_url: Where the files live (a mirror, or ``file://`` / ``http://127.0.0.1`` in tests).

    Returns:
        The files' paths in ``dest``, splits outer, languages inner.

    Raises:
        DataError: Unknown split or language, a network failure (naming the URL), a file missing
            from ``from_dir``, a sha256 mismatch (naming file, expected and actual), or ``dest``
            not writable.
    """
    names = [f"{split}.{lang}.gz" for split in splits for lang in langs]
    unknown = [name for name in names if name not in MULTI30K_SHA256]
    if unknown:
        known = ", ".join(MULTI30K_SHA256)
        raise DataError(f"multi30k has no {', '.join(unknown)} (known files: {known})")
    if from_dir is not None and not Path(from_dir).is_dir():
        raise DataError(f"{from_dir}: no such folder (to copy Multi30k from)")
    dest = Path(dest)
    try:
        dest.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise DataError(f"{dest}: cannot create folder ({err.strerror or err})") from err
    paths = []
    for name in names:
        target, expected = dest / name, MULTI30K_SHA256[name]
        if target.is_file() and file_digest(target) == expected:
            logger.info("%s: already present, sha256 ok", target)
        else:
            source = Path(from_dir) / name if from_dir is not None else f"{base_url}/{name}"
            fetch_file(source, target, ("sha256", expected), progress, "Multi30k")
        paths.append(target)
    return paths


def fetch_file(source: str | Path, target: Path, expected: Checksum, progress: Progress | None, what: str) -> None:
    """Transfer one file (a URL, or a local path to copy) through ``target.part``, verify its
    checksum, rename it into place; a failure leaves no file. `what` names the corpus in errors."""
    part = target.with_name(target.name + ".part")
    logger.debug("fetching %s -> %s", source, target)
    algorithm, digest = expected
    try:
        try:
            actual = _transfer(source, part, target.name, progress, algorithm, what)
        except OSError as err:  # source errors are DataErrors already; this is the destination
            raise DataError(f"{part}: cannot write ({err.strerror or err})") from err
        if actual != digest:
            raise DataError(f"{source}: {algorithm} mismatch: expected {digest}, got {actual}")
        os.replace(part, target)
    except BaseException:
        part.unlink(missing_ok=True)
        raise


def _transfer(source: str | Path, part: Path, name: str, progress: Progress | None, algorithm: str, what: str) -> str:
    """Stream ``source`` into ``part`` (fsynced); return the digest of the bytes."""
    digest, done = hashlib.new(algorithm), 0
    with _open_source(source, what) as (stream, total), open(part, "wb") as out:
        while chunk := _read(stream, source):
            digest.update(chunk)
            out.write(chunk)
            done += len(chunk)
            if progress is not None:
                progress(name, done, total)
        out.flush()
        os.fsync(out.fileno())
    return digest.hexdigest()


@contextmanager
def _open_source(source: str | Path, what: str) -> Iterator[tuple[BinaryIO, int | None]]:
    """Open a local file or a URL; yield the stream and its size (None if unknown)."""
    if isinstance(source, Path):
        if not source.is_file():
            raise DataError(f"{source}: no such file (copying {what} from {source.parent})")
        with open(source, "rb") as stream:
            yield stream, source.stat().st_size
        return
    try:
        response = urllib.request.urlopen(source, timeout=TIMEOUT_S)
    except urllib.error.HTTPError as err:
        raise DataError(f"{source}: download failed (HTTP {err.code} {err.reason})") from err
    except (urllib.error.URLError, OSError) as err:
        raise DataError(f"{source}: download failed ({getattr(err, 'reason', err)})") from err
    with response:
        length = response.headers.get("Content-Length")
        yield response, int(length) if length else None


def _read(stream: BinaryIO, source: str | Path) -> bytes:
    """Read the next chunk, turning a network or disk failure into a DataError naming ``source``."""
    try:
        return stream.read(_CHUNK)
    except (OSError, http.client.HTTPException) as err:
        what = "read" if isinstance(source, Path) else "download"
        raise DataError(f"{source}: {what} failed ({err!r})") from err


def file_digest(path: Path, algorithm: str = "sha256") -> str:
    """The hex digest of a file's bytes (sha256 or md5)."""
    digest = hashlib.new(algorithm)
    with open(path, "rb") as stream:
        while chunk := stream.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()
