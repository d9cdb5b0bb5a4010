"""Tests for attnkit.families.translation.data.fetch: copy and download paths, checksums, atomic writes. No internet:
downloads come from a local http.server on 127.0.0.1 serving a temporary folder."""

from __future__ import annotations

import functools
import hashlib
import shutil
import threading
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from attnkit.errors import DataError
from attnkit.families.translation.data import fetch
from attnkit.families.translation.data.fetch import MULTI30K_SHA256, fetch_multi30k

VAL = {"langs": ("en", "de"), "splits": ("val",)}


class QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, *args: object) -> None:  # keep test output clean
        pass


@pytest.fixture
def server(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """A local HTTP server; yields its base URL and the folder it serves."""
    root = tmp_path / "served"
    root.mkdir()
    handler = functools.partial(QuietHandler, directory=str(root))
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}", root
    httpd.shutdown()
    httpd.server_close()


def test_sha256_table_matches_the_staged_copy(multi30k: Path) -> None:
    assert len(MULTI30K_SHA256) == 12
    for name, expected in MULTI30K_SHA256.items():
        assert hashlib.sha256((multi30k / name).read_bytes()).hexdigest() == expected


def test_copy_from_folder_then_skip_present_files(multi30k: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    dest = tmp_path / "m30k"
    paths = fetch_multi30k(dest, from_dir=multi30k)
    assert [p.name for p in paths[:4]] == [f"train.{lang}.gz" for lang in ("en", "de", "fr", "cs")]
    assert len(paths) == 12
    assert all(p.read_bytes() == (multi30k / p.name).read_bytes() for p in paths)
    assert not list(dest.glob("*.part"))
    monkeypatch.setattr(fetch, "fetch_file", lambda *a: pytest.fail("re-fetched a verified file"))
    assert fetch_multi30k(dest, from_dir=multi30k) == paths


def test_bad_checksum_names_file_expected_and_actual(multi30k: Path, tmp_path: Path) -> None:
    tampered = tmp_path / "tampered"
    tampered.mkdir()
    shutil.copy(multi30k / "val.en.gz", tampered)
    data = bytearray((multi30k / "val.de.gz").read_bytes())
    data[100] ^= 1
    (tampered / "val.de.gz").write_bytes(data)
    actual = hashlib.sha256(data).hexdigest()
    dest = tmp_path / "dest"
    with pytest.raises(DataError) as err:
        fetch_multi30k(dest, from_dir=tampered, **VAL)
    expected = MULTI30K_SHA256["val.de.gz"]
    assert str(err.value) == (f"{tampered / 'val.de.gz'}: sha256 mismatch: expected {expected}, got {actual}")
    assert sorted(p.name for p in dest.iterdir()) == ["val.en.gz"]  # no .part, no bad file


def test_missing_file_in_from_folder(multi30k: Path, tmp_path: Path) -> None:
    partial = tmp_path / "partial"
    partial.mkdir()
    shutil.copy(multi30k / "val.en.gz", partial)
    with pytest.raises(DataError) as err:
        fetch_multi30k(tmp_path / "dest", from_dir=partial, **VAL)
    assert str(err.value) == (f"{partial / 'val.de.gz'}: no such file (copying Multi30k from {partial})")
    with pytest.raises(DataError, match=r"/absent: no such folder \(to copy Multi30k from\)$"):
        fetch_multi30k(tmp_path / "dest", from_dir=tmp_path / "absent", **VAL)


def test_download_verifies_reports_progress_and_replaces_bad_copies(multi30k: Path, tmp_path: Path, server: tuple[str, Path]) -> None:
    base_url, root = server
    for name in ("val.en.gz", "val.de.gz"):
        shutil.copy(multi30k / name, root)
    dest = tmp_path / "dest"
    dest.mkdir()
    (dest / "val.en.gz").write_bytes(b"stale")  # wrong checksum: must be fetched again
    calls: list[tuple[str, int, int | None]] = []
    paths = fetch_multi30k(dest, base_url=base_url, progress=lambda *c: calls.append(c), **VAL)
    assert [p.read_bytes() for p in paths] == [(multi30k / p.name).read_bytes() for p in paths]
    en_size, de_size = ((multi30k / f"val.{lang}.gz").stat().st_size for lang in ("en", "de"))
    assert ("val.en.gz", en_size, en_size) in calls
    assert calls[-1] == ("val.de.gz", de_size, de_size)


def test_download_failure_names_the_url(tmp_path: Path, server: tuple[str, Path]) -> None:
    base_url, _ = server  # serves an empty folder: 404
    message = rf"^{base_url}/val\.en\.gz: download failed \(HTTP 404 File not found\)$"
    with pytest.raises(DataError, match=message):
        fetch_multi30k(tmp_path / "dest", base_url=base_url, **VAL)
    assert list((tmp_path / "dest").iterdir()) == []


def test_unreachable_host_names_the_url(tmp_path: Path, server: tuple[str, Path]) -> None:
    base_url, _ = server
    closed = base_url.rsplit(":", 1)[0] + ":9"  # the discard port: nothing listens there
    with pytest.raises(DataError, match=rf"^{closed}/val\.en\.gz: download failed \("):
        fetch_multi30k(tmp_path / "dest", base_url=closed, **VAL)


def test_unknown_language(tmp_path: Path) -> None:
    with pytest.raises(DataError, match=r"^multi30k has no val\.ja\.gz \(known files: "):
        fetch_multi30k(tmp_path, langs=("ja",), splits=("val",))
