"""Where a translation run's text comes from: Multi30k, WMT14 (as `attnkit data fetch` writes them), user files, or a synthetic task."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from attnkit.data.tables import cell, iter_rows
from attnkit.data.text import read_parallel
from attnkit.errors import DataError
from attnkit.families.translation.config import Data
from attnkit.families.translation.data.synthetic import generate


@dataclass(frozen=True)
class Table:
    """One table file of pairs: the `src_column` and `tgt_column` of each row."""

    path: str
    src_column: str
    tgt_column: str

    def pairs(self) -> list[tuple[str, str]]:
        """The (source, target) pairs in file order.

        Raises:
            DataError: As `attnkit.data.tables.iter_rows`; a missing or empty side names the file and line.
        """
        columns = (self.src_column, self.tgt_column)
        pairs = [(cell(row, columns[0], where), cell(row, columns[1], where)) for where, row in iter_rows(self.path, columns)]
        if not pairs:
            raise DataError(f"{self.path}: no pairs")
        return pairs


Split = tuple[str, str] | Table | list[tuple[str, str]]  # (src path, tgt path), a table file, or in-memory pairs

MULTI30K_SPLITS = {"train": "train", "valid": "val", "test": "test_2016_flickr"}
# Looked for in order when neither --data nor data.dir names a Multi30k folder.
MULTI30K_DEFAULT_DIRS = ("data/multi30k", "../shared/data/multi30k")


def multi30k_dir(data: Data, override: str | None = None) -> Path:
    """The first folder holding Multi30k's train file for the source language."""
    candidates = [override] if override else ([data.dir] if data.dir else list(MULTI30K_DEFAULT_DIRS))
    for folder in candidates:
        if (Path(folder) / f"train.{data.src_lang}.gz").is_file():
            return Path(folder)
    raise DataError(f"Multi30k not found in {', '.join(map(str, candidates))} (run `attnkit data fetch multi30k --out data/multi30k`, or pass --data DIR)")


WMT14_SPLITS = {"train": "train", "valid": "newstest2013", "test": "newstest2014"}
WMT14_PAIRS = ("en-de", "en-fr")  # either direction


def _wmt14_file(folder: Path, stem: str, lang: str) -> Path:
    return folder / (f"{stem}.{lang}.gz" if stem == "train" else f"{stem}.{lang}")


def wmt14_dir(data: Data, override: str | None = None) -> Path:
    """The folder `attnkit data fetch wmt14` filled for the run's pair (default data/wmt14-en-XX)."""
    langs = (data.src_lang, data.tgt_lang)
    pair = "en-" + (data.tgt_lang if data.src_lang == "en" else data.src_lang)
    if "en" not in langs or pair not in WMT14_PAIRS:
        raise DataError(f"wmt14 has the pairs {' and '.join(WMT14_PAIRS)} (either direction), not {data.src_lang}-{data.tgt_lang}")
    folder = Path(override or data.dir or f"data/wmt14-{pair}")
    missing = [f.name for stem in WMT14_SPLITS.values() for lang in langs if not (f := _wmt14_file(folder, stem, lang)).is_file()]
    if missing:
        raise DataError(
            f"WMT14 {pair} not found in {folder} (missing {', '.join(missing)}): run `attnkit data fetch wmt14 --pair {pair} --out {folder}`, or pass --data DIR"
        )
    return folder


def corpus_splits(data: Data, data_dir: str | None = None) -> dict[str, Split]:
    """train/valid/test of the configured corpus (test may be absent for `files`)."""
    if data.corpus == "synthetic":
        s = data.synthetic
        sizes = {"train": s.train_size, "valid": s.valid_size, "test": s.test_size}
        return {
            name: generate(s.task, n, vocab_size=s.vocab_size, min_len=s.min_len, max_len=s.max_len, seed=s.seed + i)
            for i, (name, n) in enumerate(sizes.items())
        }
    if data.corpus == "none":
        raise DataError("data.corpus is none (an imported model): fine-tune it with `attnkit train CONFIG --init RUN`, CONFIG naming the data")
    if data.corpus == "multi30k":
        folder = multi30k_dir(data, data_dir)
        return {name: (str(folder / f"{stem}.{data.src_lang}.gz"), str(folder / f"{stem}.{data.tgt_lang}.gz")) for name, stem in MULTI30K_SPLITS.items()}
    if data.corpus == "wmt14":
        folder = wmt14_dir(data, data_dir)
        return {name: (str(_wmt14_file(folder, stem, data.src_lang)), str(_wmt14_file(folder, stem, data.tgt_lang))) for name, stem in WMT14_SPLITS.items()}
    files = {"train": data.train, "valid": data.valid, "test": data.test}
    return {
        name: Table(pair, data.src_column, data.tgt_column) if isinstance(pair, str) else (pair.src, pair.tgt)
        for name, pair in files.items()
        if pair is not None
    }


def split_files(split: Split) -> list[str]:
    """The files a split reads (their bytes key the prepared data)."""
    return list(split) if isinstance(split, tuple) else [split.path] if isinstance(split, Table) else []


def split_pairs(split: Split) -> list[tuple[str, str]]:
    """The (source, target) text pairs of a split, read from disk if needed."""
    if isinstance(split, Table):
        return split.pairs()
    return read_parallel(*split) if isinstance(split, tuple) else list(split)
