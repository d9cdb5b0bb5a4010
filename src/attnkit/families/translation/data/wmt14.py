"""`attnkit data fetch wmt14 --pair en-de|en-fr`: the WMT 2014 data of "Attention Is All You Need", verified, as text.

Vaswani et al. (2017), sec. 5.1, train on the WMT 2014 English-German data (about 4.5 million
sentence pairs) and the larger English-French data (36 million), validate on newstest2013 and test
on newstest2014. The archives are the WMT 2014 shared task's own (statmt.org):

| pair | training corpora (in this order) |
|---|---|
| en-de | Europarl v7, Common Crawl, News Commentary v9 |
| en-fr | the same three, the UN corpus (undoc.2000), the 10^9 French-English corpus (giga-fren) |

Validation is newstest2013 (`wmt13/test.tgz`), test the full newstest2014 (`wmt14/test-full.tgz`,
3,003 sentences for en-de and en-fr: sacreBLEU's `wmt14/full`), in the English -> X direction.

What is verified: every archive before it is used. The training archives' sha256 values and sizes
are those TensorFlow Datasets publishes for the same URLs (`url_checksums/wmt14_translate.txt` and
`wmt15_translate.txt`); the two test-set archives' md5 values are those sacreBLEU's dataset table
publishes (`wmt13`, `wmt14/full`), which sacreBLEU itself checks when it downloads them.

`dest` gets the verified archives in `downloads/` (kept: a rerun skips them) and, extracted from them:
- `train.en.gz`, `train.XX.gz`: every training corpus concatenated, line for line (a corpus whose
  two sides differ in line count is an error naming it); the bytes of each line as published;
- `newstest2013.en`, `newstest2013.XX`, `newstest2014.en`, `newstest2014.XX`: the text of each
  `<seg>` of the SGML files, surrounding whitespace removed and inner runs of it collapsed (as
  sacreBLEU extracts them, so its references and these agree);
- `manifest.json`: the archives and their checksums, each corpus and its line count.
"""

from __future__ import annotations

import gzip
import json
import logging
import re
import tarfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from attnkit.errors import DataError
from attnkit.families.translation.data.fetch import Checksum, Progress, fetch_file, file_digest
from attnkit.io import atomic_path, atomic_write_text

logger = logging.getLogger("attnkit")


@dataclass(frozen=True)
class Archive:
    url: str
    checksum: Checksum
    size: int | None = None  # bytes, where published


ARCHIVES = {
    "training-parallel-europarl-v7.tgz": Archive(
        "http://www.statmt.org/wmt13/training-parallel-europarl-v7.tgz",
        ("sha256", "0224c7c710c8a063dfd893b0cc0830202d61f4c75c17eb8e31836103d27d96e7"),
        657632379,
    ),
    "training-parallel-commoncrawl.tgz": Archive(
        "http://www.statmt.org/wmt13/training-parallel-commoncrawl.tgz",
        ("sha256", "c7a74e2ea01ac6c920123108627e35278d4ccb5701e15428ffa34de86fa3a9e5"),
        918311367,
    ),
    "training-parallel-nc-v9.tgz": Archive(
        "http://www.statmt.org/wmt14/training-parallel-nc-v9.tgz", ("sha256", "cb8953f292298e6877ae433c98912b927cb0766b303f4540512ddd286c748485"), 80418416
    ),
    "training-parallel-un.tgz": Archive(
        "http://www.statmt.org/wmt13/training-parallel-un.tgz", ("sha256", "29141b5c1eba149a94f7a59d3b1a834b2e47fe0f8758d68dcd77a3d3f497ee47"), 2365634246
    ),
    "training-giga-fren.tar": Archive(
        "http://www.statmt.org/wmt10/training-giga-fren.tar", ("sha256", "3ff8319f6919393520559bfbc7ad6a747ec81b3abc7be9993b338d4b017b4d9a"), 2595102720
    ),
    "wmt13-test.tgz": Archive("http://statmt.org/wmt13/test.tgz", ("md5", "48eca5d02f637af44e85186847141f67")),
    "wmt14-test-full.tgz": Archive("http://statmt.org/wmt14/test-full.tgz", ("md5", "a8cd784e006feb32ac6f3d9ec7eb389a")),
}

# pair -> [(corpus name, archive, member with {lang} for the language)]
TRAIN = {
    "en-de": [
        ("europarl-v7", "training-parallel-europarl-v7.tgz", "training/europarl-v7.de-en.{lang}"),
        ("commoncrawl", "training-parallel-commoncrawl.tgz", "commoncrawl.de-en.{lang}"),
        ("news-commentary-v9", "training-parallel-nc-v9.tgz", "training/news-commentary-v9.de-en.{lang}"),
    ],
    "en-fr": [
        ("europarl-v7", "training-parallel-europarl-v7.tgz", "training/europarl-v7.fr-en.{lang}"),
        ("commoncrawl", "training-parallel-commoncrawl.tgz", "commoncrawl.fr-en.{lang}"),
        ("news-commentary-v9", "training-parallel-nc-v9.tgz", "training/news-commentary-v9.fr-en.{lang}"),
        ("un", "training-parallel-un.tgz", "un/undoc.2000.fr-en.{lang}"),
        ("giga-fren", "training-giga-fren.tar", "giga-fren.release2.fixed.{lang}.gz"),
    ],
}
# split file stem -> (archive, member per language); {pair} is deen or fren, {x} the other language.
EVAL = {
    "newstest2013": ("wmt13-test.tgz", {"en": "test/newstest2013-src.en.sgm", "x": "test/newstest2013-src.{x}.sgm"}),
    "newstest2014": ("wmt14-test-full.tgz", {"en": "test-full/newstest2014-{pair}-src.en.sgm", "x": "test-full/newstest2014-{pair}-ref.{x}.sgm"}),
}
PAIRS = tuple(TRAIN)
_SEG = re.compile(r"<seg.*?>(.*)</seg>.*?")
_SPACE = re.compile(r"\s+")


def needed_archives(pair: str) -> list[str]:
    """The archive names `pair` needs, in the order they are fetched."""
    names = [archive for _, archive, _ in TRAIN[pair]] + [archive for archive, _ in EVAL.values()]
    return list(dict.fromkeys(names))


def fetch_wmt14(dest: str | Path, pair: str, *, from_dir: str | Path | None = None, progress: Progress | None = None) -> list[Path]:
    """Download (or copy from `from_dir`) and verify the archives of `pair`, then extract its text into `dest`.

    Returns:
        The extracted files: train.en.gz, train.XX.gz, then newstest2013 and newstest2014, en first.

    Raises:
        DataError: an unknown pair, a download or copy failure, a checksum mismatch, a member
            missing from an archive, or two sides of a corpus that differ in line count.
    """
    if pair not in TRAIN:
        raise DataError(f"wmt14 has no pair {pair!r} (pairs: {', '.join(PAIRS)})")
    if from_dir is not None and not Path(from_dir).is_dir():
        raise DataError(f"{from_dir}: no such folder (to copy the WMT14 archives from)")
    dest = Path(dest)
    downloads = dest / "downloads"
    try:
        downloads.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise DataError(f"{downloads}: cannot create folder ({err.strerror or err})") from err
    for name in needed_archives(pair):
        archive, target = ARCHIVES[name], downloads / name
        if target.is_file() and file_digest(target, archive.checksum[0]) == archive.checksum[1]:
            logger.info("%s: already present, %s ok", target, archive.checksum[0])
            continue
        fetch_file(Path(from_dir) / name if from_dir is not None else archive.url, target, archive.checksum, progress, "WMT14")
    x = pair.split("-")[1]
    counts = _extract_train(downloads, pair, dest, x)
    paths = [dest / "train.en.gz", dest / f"train.{x}.gz"]
    for stem, (archive, members) in EVAL.items():
        for lang, member in (("en", members["en"]), (x, members["x"])):
            path = dest / f"{stem}.{lang}"
            lines = _sgml_text(_member(downloads / archive, member.format(pair=f"{x}en", x=x)))
            atomic_write_text(path, "".join(line + "\n" for line in lines))
            counts[f"{stem}.{lang}"] = len(lines)
            paths.append(path)
    manifest = {"pair": pair, "archives": {n: {"url": ARCHIVES[n].url, ARCHIVES[n].checksum[0]: ARCHIVES[n].checksum[1]} for n in needed_archives(pair)},
                "lines": counts}  # fmt: skip
    atomic_write_text(dest / "manifest.json", json.dumps(manifest, indent=1) + "\n")
    return paths


def _extract_train(downloads: Path, pair: str, dest: Path, x: str) -> dict[str, int]:
    """Concatenate every training corpus of `pair` into train.en.gz and train.XX.gz; returns the line count of each corpus."""
    counts = {}
    with atomic_path(dest / "train.en.gz") as en_tmp, atomic_path(dest / f"train.{x}.gz") as x_tmp:
        with gzip.open(en_tmp, "wb", compresslevel=1) as en_out, gzip.open(x_tmp, "wb", compresslevel=1) as x_out:
            for corpus, archive, member in TRAIN[pair]:
                n_en = _copy_lines(_member(downloads / archive, member.format(lang="en")), en_out)
                n_x = _copy_lines(_member(downloads / archive, member.format(lang=x)), x_out)
                if n_en != n_x:
                    raise DataError(f"{downloads / archive}: {corpus} has {n_en} English and {n_x} {x} lines; the archive is not the published one")
                logger.info("wmt14 %s: %s, %d lines", pair, corpus, n_en)
                counts[corpus] = n_en
    return counts


def _member(archive: Path, name: str) -> Iterator[bytes]:
    """The lines (bytes, line end included) of one member of a tar archive (a .gz member decompressed)."""
    try:
        with tarfile.open(archive, "r:*") as tar:
            try:
                stream: BinaryIO | None = tar.extractfile(name)
            except KeyError:
                raise DataError(f"{archive}: has no member {name}") from None
            if stream is None:
                raise DataError(f"{archive}: {name} is not a file")
            with gzip.open(stream, "rb") if name.endswith(".gz") else stream as lines:
                yield from lines
    except (tarfile.TarError, gzip.BadGzipFile, EOFError) as err:
        raise DataError(f"{archive}: not a readable archive ({err})") from err


def _copy_lines(lines: Iterator[bytes], out: BinaryIO) -> int:
    """Write `lines` (each ending in a newline, the last one too); return how many."""
    n = 0
    for line in lines:
        out.write(line if line.endswith(b"\n") else line + b"\n")
        n += 1
    return n


def _sgml_text(lines: Iterator[bytes]) -> list[str]:
    """The text of each `<seg ...>` line, whitespace stripped and collapsed (sacreBLEU's extraction)."""
    return [_SPACE.sub(" ", _SEG.sub(r"\1", line.decode("utf-8")).strip()) for line in lines if line.startswith(b"<seg ")]
