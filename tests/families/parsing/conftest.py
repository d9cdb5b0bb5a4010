"""Fixtures for the parsing tests: the staged PTB sample and EVALB files (shared/data README 4, 6)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from attnkit.families.parsing.trees import (
    Tree,
    preprocess_treebank,
    read_treebank,
    split_sample,
)

# The shared data folder beside the checkout, as tests/data/conftest.py finds it.
SHARED = Path(os.environ.get("ATTNKIT_SHARED_DATA", Path(__file__).resolve().parents[4] / "shared/data"))
TREEBANK = SHARED / "ptb_sample/treebank.zip"
EVALB_DIR = SHARED / "evalb_sample"


@pytest.fixture(scope="session")
def raw_treebank() -> dict[str, list[Tree]]:
    """The NLTK WSJ sample as read, by file name; skip if it is not staged here."""
    if not TREEBANK.is_file():
        pytest.skip(f"{TREEBANK} not available")
    return read_treebank(TREEBANK)


@pytest.fixture(scope="session")
def treebank(raw_treebank: dict[str, list[Tree]]) -> dict[str, list[Tree]]:
    """The sample after `preprocess` (function tags, -NONE- and emptied nodes removed)."""
    return preprocess_treebank(raw_treebank)


@pytest.fixture(scope="session")
def splits(treebank: dict[str, list[Tree]]) -> dict[str, list[Tree]]:
    return split_sample(treebank)


@pytest.fixture(scope="session")
def evalb_dir() -> Path:
    """EVALB's sample files; skip if they are not staged here."""
    if not (EVALB_DIR / "sample.rsl").is_file():
        pytest.skip(f"{EVALB_DIR} not available")
    return EVALB_DIR
