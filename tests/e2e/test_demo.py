"""`attnkit demo` end to end on a slice of Multi30k: it trains the demo preset for a few seconds,
translates the test split, and leaves the heatmap, the HTML report and the serve command."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from attnkit.cli import main

pytestmark = pytest.mark.slow  # docs/conventions.md, Tests

MULTI30K = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "multi30k"
SLICES = {"train": 3000, "val": 40, "test_2016_flickr": 12}


@pytest.fixture(scope="module")
def multi30k_slice(tmp_path_factory) -> Path:
    if not (MULTI30K / "train.en.gz").is_file():
        pytest.skip(f"{MULTI30K} is absent (the shared Multi30k copy)")
    out = tmp_path_factory.mktemp("m30k")
    for stem, n in SLICES.items():
        for lang in ("en", "de"):
            with gzip.open(MULTI30K / f"{stem}.{lang}.gz", "rt", encoding="utf-8") as f:
                lines = [next(f) for _ in range(n)]
            with gzip.open(out / f"{stem}.{lang}.gz", "wt", encoding="utf-8") as f:
                f.writelines(lines)
    return out


def test_demo_trains_translates_and_leaves_its_files(multi30k_slice, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["demo", "--data", str(multi30k_slice), "--steps", "3", "--out", "demo"]) == 0
    out = capsys.readouterr().out
    assert "Training rnn-luong-m30k (LSTM encoder-decoder with Luong attention)" in out
    assert f"Test BLEU (beam 5, {SLICES['test_2016_flickr']} sentences): " in out
    assert out.count("  src: ") == 3 and out.count("  ref: ") == 3
    assert (tmp_path / "demo" / "attention.png").stat().st_size > 5_000
    report = (tmp_path / "demo" / "report.html").read_text(encoding="utf-8")
    with gzip.open(multi30k_slice / "test_2016_flickr.en.gz", "rt", encoding="utf-8") as f:
        first = f.readline().strip()
    assert first in report and "encoder-decoder attention" in report
    assert '<script type="application/json" id="curves-data">[{"name": "demo"' in report  # the training curves
    assert ".venv/bin/attnkit serve demo " in out
    assert [line for line in (tmp_path / "demo" / "metrics.jsonl").read_text().splitlines() if '"valid"' in line], "one validation at the end"
