"""Where a sentence classification run's examples come from: the SST trees, SNLI or labelled
TSV/CSV/JSONL files."""

from __future__ import annotations

from pathlib import Path

from attnkit.errors import DataError
from attnkit.families.classification.config import ClassifyData
from attnkit.families.classification.data import (
    SNLI_LABELS,
    LabelledText,
    LabelMap,
    read_labelled,
    read_snli,
    read_sst_trees,
    split_by_premise,
)  # fmt: skip

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


def classify_files(data: ClassifyData, data_dir: str | None = None) -> list[Path]:
    """The files `classify_splits` reads (their bytes key the prepared data)."""
    if data.corpus == "sst":
        folder = classify_dir(data, data_dir)
        return [folder / "trees_train.txt.gz", folder / "trees_dev.txt.gz"]
    if data.corpus == "snli" and data.train is None:
        return [classify_dir(data, data_dir) / CLASSIFY_FILES["snli"]]
    return [Path(data.train), Path(data.valid)]


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
