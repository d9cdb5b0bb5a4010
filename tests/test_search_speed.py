"""benchmarks/search_speed.py: one JSON line comparing two checkouts' beam search on one run."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from benchmark_scripts import BENCHMARKS

ROOT = BENCHMARKS.parent


def run_script(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(BENCHMARKS / "search_speed.py"), *args], capture_output=True, text=True, cwd=ROOT)


def test_a_tiny_run_against_this_checkout(tiny_transformer_run: Path, multi30k: Path) -> None:
    # This checkout on both sides: the outputs must be identical; the times are only checked for shape.
    done = run_script(str(tiny_transformer_run), "--before", str(ROOT), "--n", "3", "--repeats", "1", "--threads", "1", "--data", str(multi30k.parent))
    assert done.returncode == 0, done.stderr
    record = json.loads(done.stdout.splitlines()[-1])
    assert (record["family"], record["beam"], record["sentences"]) == ("translation", 5, 3)
    assert record["identical"] is True and record["same_outputs"] == 1.0
    for side in ("before", "after"):
        assert record[side]["checkout"] == str(ROOT)
        assert record[side]["seconds"] > 0 and len(record[side]["times"]) == 1
    assert record["speedup"] > 0


def test_before_must_be_a_checkout(tiny_transformer_run: Path, tmp_path: Path) -> None:
    done = run_script(str(tiny_transformer_run), "--before", str(tmp_path))
    assert done.returncode != 0
    assert "not a checkout of attnkit" in done.stderr


@pytest.mark.slow  # torch.compile of the step: about 40 s on 2 cores
def test_compile_times_the_compiled_step_against_the_eager_one(tiny_transformer_run: Path, multi30k: Path) -> None:
    # The after side compiles its step: same outputs, its first (compiling) decode reported apart.
    done = run_script(
        str(tiny_transformer_run),
        "--before",
        str(ROOT),
        "--compile",
        "--beam",
        "1",
        "--n",
        "2",
        "--repeats",
        "1",
        "--threads",
        "1",
        "--data",
        str(multi30k.parent),
    )
    assert done.returncode == 0, done.stderr
    record = json.loads(done.stdout.splitlines()[-1])
    assert record["compile"] is True and record["identical"] is True
    assert len(record["after"]["first_seconds"]) == 1 and "first_seconds" not in record["before"]
