"""Where a run's text comes from: Multi30k files, user files, or a built-in synthetic task; for
sentence classification, the SST trees, SNLI or labelled TSV/CSV/JSONL files."""

from __future__ import annotations

from pathlib import Path
from typing import Union

from attnkit.config.schema import ClassifyData, Data
from attnkit.data.classify import (
    SNLI_LABELS, LabelledText, LabelMap, read_labelled, read_snli, read_sst_trees, split_by_premise,
)  # fmt: skip
from attnkit.data.synthetic import generate
from attnkit.data.text import read_parallel
from attnkit.errors import DataError

Split = Union[tuple[str, str], list[tuple[str, str]]]  # (src path, tgt path) or in-memory pairs

MULTI30K_SPLITS = {"train": "train", "valid": "val", "test": "test_2016_flickr"}
# Looked for in order when neither --data nor data.dir names a Multi30k folder.
MULTI30K_DEFAULT_DIRS = ("data/multi30k", "../shared/data/multi30k")


def multi30k_dir(data: Data, override: str | None = None) -> Path:
    """The first folder holding Multi30k's train file for the source language."""
    candidates = [override] if override else ([data.dir] if data.dir else list(MULTI30K_DEFAULT_DIRS))
    for folder in candidates:
        if (Path(folder) / f"train.{data.src_lang}.gz").is_file():
            return Path(folder)
    raise DataError(
        f"Multi30k not found in {', '.join(map(str, candidates))} "
        f"(run `attnkit data fetch multi30k --dest data/multi30k`, or pass --data DIR)"
    )


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
        return {
            name: (str(folder / f"{stem}.{data.src_lang}.gz"), str(folder / f"{stem}.{data.tgt_lang}.gz"))
            for name, stem in MULTI30K_SPLITS.items()
        }
    files = {"train": data.train, "valid": data.valid, "test": data.test}
    return {name: (pair.src, pair.tgt) for name, pair in files.items() if pair is not None}


def split_pairs(split: Split) -> list[tuple[str, str]]:
    """The (source, target) text pairs of a split, read from disk if needed."""
    return read_parallel(*split) if isinstance(split, tuple) else list(split)


# Looked for in order when neither --data nor data.dir names the folder (sentence classification).
CLASSIFY_DEFAULT_DIRS = {"sst": ("data/sst", "../shared/data/sst"), "snli": ("data/snli", "../shared/data/snli")}
CLASSIFY_FILES = {"sst": "trees_train.txt.gz", "snli": "snli_1.0_dev.tsv.gz"}


def classify_dir(data: ClassifyData, override: str | None = None) -> Path:
    """The first folder holding the SST trees or the SNLI file."""
    candidates = [override] if override else ([data.dir] if data.dir else list(CLASSIFY_DEFAULT_DIRS[data.corpus]))
    for folder in candidates:
        if (Path(folder) / CLASSIFY_FILES[data.corpus]).is_file():
            return Path(folder)
    raise DataError(f"{CLASSIFY_FILES[data.corpus]} not found in {', '.join(map(str, candidates))} (pass --data DIR or set data.dir)")


def classify_splits(data: ClassifyData, data_dir: str | None = None) -> tuple[list[LabelledText], list[LabelledText], LabelMap]:
    """(train, valid, labels) of a classification corpus; valid labels are checked against train's."""
    if data.corpus == "sst":
        folder = classify_dir(data, data_dir)
        train, labels = read_sst_trees(folder / "trees_train.txt.gz", phrases=data.phrases, binary=data.binary)
        valid, _ = read_sst_trees(folder / "trees_dev.txt.gz", binary=data.binary)
        return train, valid, labels
    if data.corpus == "snli":
        if data.train is not None:
            return read_snli(data.train), read_snli(data.valid), LabelMap(SNLI_LABELS)
        train, valid = split_by_premise(read_snli(classify_dir(data, data_dir) / CLASSIFY_FILES["snli"]), data.dev_fraction)
        return train, valid, LabelMap(SNLI_LABELS)
    columns = {"text_column": data.text_column, "label_column": data.label_column, "text2_column": data.text2_column}
    train, labels = read_labelled(data.train, **columns)
    valid, _ = read_labelled(data.valid, label_map=labels, **columns)
    return train, valid, labels
