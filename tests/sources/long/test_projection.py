"""scripts/long_context_projection.py, which docs/explorer.md runs: its result file, the Llama-3.1-8B table of the
page, is what the memory guard says now."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

PROJECTION = "PYTHONPATH=src .venv/bin/python scripts/long_context_projection.py --budget 32G\n"  # docs/explorer.md runs it


def runs(page) -> list[str]:
    """The bash blocks of `page` this file runs (tests/docs/test_bash_blocks.py)."""
    return [PROJECTION] if page.name == "explorer.md" else []


@pytest.mark.slow  # a fresh process that builds Llama-3.1-8B on the meta device: about 15 s on 2 busy cores
def test_the_projection_file_is_what_the_guard_says_now(tmp_path):
    """benchmarks/results/long_context_projection.jsonl (docs/explorer.md's Llama-3.1-8B table) is current, and 128k
    tokens spill: their kept queries and keys are 40 GiB (32 layers x (32 + 8) heads x 131,072 x 128 x 2 bytes)."""
    repo = Path(__file__).resolve().parents[3]
    argv = PROJECTION.split()[1:]
    argv[0], argv[1] = sys.executable, str(repo / argv[1])
    subprocess.run([*argv, "--out", str(tmp_path / "p.jsonl")], check=True, capture_output=True, env={**os.environ, "PYTHONPATH": str(repo / "src")})
    fresh = [json.loads(line) for line in (tmp_path / "p.jsonl").read_text().splitlines()]
    committed = [json.loads(line) for line in (repo / "benchmarks/results/long_context_projection.jsonl").read_text().splitlines()]
    assert [{**line, "date": None} for line in fresh] == [{**line, "date": None} for line in committed]
    last = fresh[-1]
    assert (last["tokens"], last["kept_gib"], last["attnkit"]) == (131072, 40.0, "spills the kept queries and keys to disk")
