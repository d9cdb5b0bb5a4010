"""Where a translation run's text comes from: Multi30k files, user files, or a built-in synthetic task."""

from __future__ import annotations

from pathlib import Path

from attnkit.data.synthetic import generate
from attnkit.data.text import read_parallel
from attnkit.errors import DataError
from attnkit.families.translation.config import Data

Split = tuple[str, str] | list[tuple[str, str]]  # (src path, tgt path) or in-memory pairs

MULTI30K_SPLITS = {"train": "train", "valid": "val", "test": "test_2016_flickr"}
# Looked for in order when neither --data nor data.dir names a Multi30k folder.
MULTI30K_DEFAULT_DIRS = ("data/multi30k", "../shared/data/multi30k")


def multi30k_dir(data: Data, override: str | None = None) -> Path:
    """The first folder holding Multi30k's train file for the source language."""
    candidates = [override] if override else ([data.dir] if data.dir else list(MULTI30K_DEFAULT_DIRS))
    for folder in candidates:
        if (Path(folder) / f"train.{data.src_lang}.gz").is_file():
            return Path(folder)
    raise DataError(f"Multi30k not found in {', '.join(map(str, candidates))} (run `attnkit data fetch multi30k --dest data/multi30k`, or pass --data DIR)")


def corpus_splits(data: Data, data_dir: str | None = None) -> dict[str, Split]:
    """train/valid/test of the configured corpus (test may be absent for `files`)."""
    if data.corpus == "synthetic":
        s = data.synthetic
        sizes = {"train": s.train_size, "valid": s.valid_size, "test": s.test_size}
        return {
            name: generate(s.task, n, vocab_size=s.vocab_size, min_len=s.min_len, max_len=s.max_len, seed=s.seed + i)
            for i, (name, n) in enumerate(sizes.items())
        }
    if data.corpus == "multi30k":
        folder = multi30k_dir(data, data_dir)
        return {name: (str(folder / f"{stem}.{data.src_lang}.gz"), str(folder / f"{stem}.{data.tgt_lang}.gz")) for name, stem in MULTI30K_SPLITS.items()}
    files = {"train": data.train, "valid": data.valid, "test": data.test}
    return {name: (pair.src, pair.tgt) for name, pair in files.items() if pair is not None}


def split_pairs(split: Split) -> list[tuple[str, str]]:
    """The (source, target) text pairs of a split, read from disk if needed."""
    return read_parallel(*split) if isinstance(split, tuple) else list(split)
