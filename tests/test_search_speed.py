"""benchmarks/search_speed.py: one JSON line comparing two checkouts' beam search on one run."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from benchmark_scripts import BENCHMARKS, load_benchmark

ROOT = BENCHMARKS.parent


def run_script(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(BENCHMARKS / "search_speed.py"), *args], capture_output=True, text=True, cwd=ROOT)


@pytest.mark.slow  # two decoding processes, one tracing its step: about 15 s on 2 cores
def test_a_tiny_run_against_this_checkout_with_the_step_compiled(tiny_transformer_run: Path, multi30k: Path) -> None:
    # This checkout on both sides, the after side's step through torch.compile (traced by TorchDynamo, run eagerly:
    # the wiring, not inductor's code, which takes a minute; what compiling buys is search_speed.py --compile's to
    # measure): the outputs must be identical, the first (compiling) decode reported apart; the times are only
    # checked for shape.
    args = ["--compile", "--compile-backend", "eager", "--beam", "1", "--n", "3", "--repeats", "1", "--threads", "1"]
    done = run_script(str(tiny_transformer_run), "--before", str(ROOT), *args, "--data", str(multi30k.parent))
    assert done.returncode == 0, done.stderr
    record = json.loads(done.stdout.splitlines()[-1])
    assert (record["family"], record["beam"], record["sentences"]) == ("translation", 1, 3)
    assert record["identical"] is True and record["same_outputs"] == 1.0
    assert record["compile"] is True and record["compile_backend"] == "eager"
    for side in ("before", "after"):
        assert record[side]["checkout"] == str(ROOT)
        assert record[side]["seconds"] > 0 and len(record[side]["times"]) == 1
    assert len(record["after"]["first_seconds"]) == 1 and "first_seconds" not in record["before"]
    assert record["speedup"] > 0


def test_before_must_be_a_checkout(tiny_transformer_run: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "argv", ["search_speed.py", str(tiny_transformer_run), "--before", str(tmp_path)])
    with pytest.raises(SystemExit, match="not a checkout of attnkit"):  # the script's main, in this process
        load_benchmark("search_speed").main()
