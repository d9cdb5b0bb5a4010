"""Fixtures for the data tests: the staged Multi30k copy and small slices of it."""

from __future__ import annotations

import gzip
import os
from pathlib import Path

import pytest

# The shared data folder beside the checkout (CI lays a copy of shared/ there too).
MULTI30K = Path(os.environ.get("ATTNKIT_MULTI30K", Path(__file__).resolve().parents[3] / "shared/data/multi30k"))


@pytest.fixture(scope="session")
def multi30k() -> Path:
    """The staged Multi30k folder (shared/data/README.md, section 1); skip if it is not here."""
    if not MULTI30K.is_dir():
        pytest.skip(f"{MULTI30K} not available")
    return MULTI30K


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
