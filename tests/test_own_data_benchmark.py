"""benchmarks/own_data_first_checkpoint.py's pieces: the files it writes for each family are what
`attnkit init FAMILY` accepts, and it reads back the own-data rule that the run prints."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from attnkit.cli import main
from attnkit.config.own_data import own_data_defaults
from benchmark_scripts import load_benchmark

bench = load_benchmark("own_data_first_checkpoint")
DATA = Path(__file__).resolve().parents[2] / "shared" / "data"


def test_the_rule_it_records_is_the_rule_the_run_printed() -> None:
    rule = own_data_defaults(10_000, 117_588, family_max_tokens=2000, max_sentences=32, items=2_000)
    found = bench.rule_of([(6.5, f"INFO: {rule.summary()}")])
    assert found["rule"] == rule.summary()
    assert {k: found[k] for k in ("examples", "tokens", "size", "max_tokens", "updates_per_epoch", "eval_every", "eval_first")} == {
        "examples": 10_000, "tokens": 117_588, "size": "base", "max_tokens": 2000, "updates_per_epoch": 63, "eval_every": 63, "eval_first": 25,
    }  # fmt: skip
    assert bench.rule_of([(1.0, "INFO: something else")]) == {"rule": None}


SLOW = {"captioning"}  # it lays out all 7,000 Flickr8k train and dev images (190 MB)


@pytest.mark.parametrize("family", [pytest.param(f, marks=pytest.mark.slow) if f in SLOW else f for f in bench.PREPARE])
def test_the_files_it_writes_are_what_init_accepts(family: str, tmp_path: Path, monkeypatch, caplog) -> None:
    if not DATA.is_dir():
        pytest.skip(f"{DATA} not available")
    arguments = bench.PREPARE[family](DATA, tmp_path, 20, 10)
    monkeypatch.chdir(tmp_path)  # the paths are relative, as a user types them in the folder
    with caplog.at_level(logging.INFO, logger="attnkit"):
        assert main(["init", family, *arguments, "--out", "my.yaml"]) == 0
    found = bench.rule_of([(0.0, r.getMessage()) for r in caplog.records])
    assert found["rule"] is not None and found["examples"] >= 20  # parsing: whole files, at least 20 trees
