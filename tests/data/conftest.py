"""Fixtures for the data tests: small slices of the staged Multi30k copy (`multi30k`, tests/conftest.py)."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def m30k_slice(multi30k: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """First 2,000 train and 200 val lines of en/de, as .gz files (fast SentencePiece training)."""
    out = tmp_path_factory.mktemp("m30k_slice")
    paths = {}
    for split, n in (("train", 2000), ("val", 200)):
        for lang in ("en", "de"):
            with gzip.open(multi30k / f"{split}.{lang}.gz", "rb") as src:
                lines = [next(src) for _ in range(n)]
            paths[f"{split}.{lang}"] = out / f"{split}.{lang}.gz"
            with gzip.open(paths[f"{split}.{lang}"], "wb") as dst:
                dst.writelines(lines)
    return paths
