"""`attnkit data fetch wmt14`: archives built here as small fixtures (never downloaded), copied with
--from, verified, and extracted; a tampered archive or a corpus whose sides differ is one error line;
a run of corpus wmt14 without the data names the command that fetches it."""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import tarfile
from pathlib import Path

import pytest

from attnkit.cli import main
from attnkit.families.translation.config import Data
from attnkit.families.translation.data import wmt14
from attnkit.families.translation.data.corpus import corpus_splits


def _tar(path: Path, members: dict[str, bytes]) -> None:
    with tarfile.open(path, "w:gz" if path.suffix == ".tgz" else "w") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))


def _sgml(lines: list[str]) -> bytes:
    segs = "".join(f'<seg id="{i}">{line}</seg>\n' for i, line in enumerate(lines, 1))
    return f'<srcset setid="x" srclang="any">\n<doc sysid="ref" docid="d1">\n{segs}</doc>\n</srcset>\n'.encode()


def _fixtures(folder: Path, pair: str, monkeypatch: pytest.MonkeyPatch, *, short: str = "") -> dict[str, list[bytes]]:
    """Write the archives of `pair` (corpus `short` loses a target line) and point `wmt14.ARCHIVES` at their checksums;
    returns the training lines each side should get."""
    x = pair.split("-")[1]
    folder.mkdir(exist_ok=True)
    archives: dict[str, dict[str, bytes]] = {}
    expected: dict[str, list[bytes]] = {"en": [], x: []}
    for corpus, archive, member in wmt14.TRAIN[pair]:
        sides = {lang: [f"{corpus} {lang} {i} \r tab\t".encode() for i in range(3)] for lang in ("en", x)}
        if corpus == short:
            sides[x] = sides[x][:-1]
        for lang, lines in sides.items():
            data = b"\n".join(lines)  # the last line without a newline: it gets one
            archives.setdefault(archive, {})[member.format(lang=lang)] = gzip.compress(data) if member.endswith(".gz") else data
            expected[lang] += [line + b"\n" for line in lines]
    for stem, (archive, members) in wmt14.EVAL.items():
        for lang, member in (("en", members["en"]), (x, members["x"])):
            archives.setdefault(archive, {})[member.format(pair=f"{x}en", x=x)] = _sgml([f"  {stem}   {lang} &amp; one ", f"{stem} {lang} two"])
    for name, members in archives.items():
        _tar(folder / name, members)
        old = wmt14.ARCHIVES[name]
        digest = hashlib.new(old.checksum[0], (folder / name).read_bytes()).hexdigest()
        monkeypatch.setitem(wmt14.ARCHIVES, name, wmt14.Archive(old.url, (old.checksum[0], digest)))
    return expected


@pytest.mark.parametrize("pair", ["en-de", "en-fr"])
def test_fetch_from_a_local_copy_extracts_every_corpus(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys, pair: str) -> None:
    x = pair.split("-")[1]
    expected = _fixtures(tmp_path / "archives", pair, monkeypatch)
    dest = tmp_path / "wmt"
    assert main(["data", "fetch", "wmt14", "--pair", pair, "--out", str(dest), "--from", str(tmp_path / "archives")]) == 0
    assert capsys.readouterr().out.startswith(f"wmt14 {pair}: archives verified; 6 text files in {dest}")
    for lang in ("en", x):
        assert gzip.decompress((dest / f"train.{lang}.gz").read_bytes()) == b"".join(expected[lang])  # a \r inside a line stays
        assert (dest / f"newstest2013.{lang}").read_text() == f"newstest2013 {lang} &amp; one\nnewstest2013 {lang} two\n"  # as sacreBLEU extracts it
    manifest = json.loads((dest / "manifest.json").read_text())
    assert manifest["lines"]["europarl-v7"] == 3 and manifest["lines"][f"newstest2014.{x}"] == 2
    assert sorted(p.name for p in (dest / "downloads").iterdir()) == sorted(wmt14.needed_archives(pair))
    splits = corpus_splits(Data(corpus="wmt14", dir=str(dest), src_lang="en", tgt_lang=x))
    assert splits["train"] == (str(dest / "train.en.gz"), str(dest / f"train.{x}.gz")) and splits["test"][1] == str(dest / f"newstest2014.{x}")
    # A rerun keeps the verified archives (nothing is copied again).
    monkeypatch.setattr(wmt14, "fetch_file", lambda *a: pytest.fail("fetched a verified archive again"))
    assert main(["data", "fetch", "wmt14", "--pair", pair, "--out", str(dest), "--from", str(tmp_path / "archives")]) == 0


def test_tampered_archive_or_uneven_corpus_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    _fixtures(tmp_path / "archives", "en-de", monkeypatch)
    nc = tmp_path / "archives" / "training-parallel-nc-v9.tgz"
    expected = wmt14.ARCHIVES[nc.name].checksum[1]
    nc.write_bytes(nc.read_bytes() + b"x")
    dest = tmp_path / "wmt"
    assert main(["data", "fetch", "wmt14", "--out", str(dest), "--from", str(tmp_path / "archives")]) == 2
    actual = hashlib.sha256(nc.read_bytes()).hexdigest()
    assert capsys.readouterr().err.splitlines()[-1] == f"attnkit: error: {nc}: sha256 mismatch: expected {expected}, got {actual}"  # after the copy's bar
    assert not (dest / "downloads" / nc.name).exists() and not list((dest / "downloads").glob("*.part"))

    _fixtures(tmp_path / "uneven", "en-de", monkeypatch, short="commoncrawl")
    assert main(["data", "fetch", "wmt14", "--out", str(dest), "--from", str(tmp_path / "uneven")]) == 2
    err = capsys.readouterr().err
    assert err.endswith("commoncrawl has 3 English and 2 de lines; the archive is not the published one\n") and not (dest / "train.en.gz").exists()


def test_paper_presets_without_the_data_name_the_fetch_command(tmp_path: Path, capsys) -> None:
    for preset in ("transformer-base", "transformer-big"):
        assert main(["train", preset, "--out", str(tmp_path / preset), "--data", str(tmp_path / "none")]) == 2
        err = capsys.readouterr().err.strip()
        assert err.startswith(f"attnkit: error: WMT14 en-de not found in {tmp_path / 'none'} (missing train.en.gz") and "\n" not in err
        assert err.endswith(f"run `attnkit data fetch wmt14 --pair en-de --out {tmp_path / 'none'}`, or pass --data DIR")
