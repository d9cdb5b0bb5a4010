"""What a user sees from a real `python -m attnkit` process: a missing optional package is one
line before any work (tests/test_extras.py has every package in process), and a closed stdout
(`attnkit ... | head -1`) ends a command quietly with status 141 and nothing on stderr."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from attnkit.cli import SIGPIPE_STATUS
from attnkit.families.captioning.shapes import write_shapes

SHARED = Path(os.environ.get("ATTNKIT_SHARED_DATA", Path(__file__).resolve().parents[3] / "shared/data"))
EVALB_DIR = SHARED / "evalb_sample"
# Loaded by site before attnkit: the named packages look uninstalled (find_spec None, import fails).
BLOCKER = "import os, sys\nfor name in os.environ.get('BLOCK_PACKAGES', '').split(','):\n    if name:\n        sys.modules[name] = None\n"


def attnkit(*args: str, env: dict | None = None, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "attnkit", *args], capture_output=True, text=True, env=env, timeout=300, **kwargs)


def blocking(tmp_path: Path, *packages: str) -> dict:
    """An environment whose Python sees `packages` as not installed (a sitecustomize on PYTHONPATH)."""
    (tmp_path / "blocker").mkdir()
    (tmp_path / "blocker" / "sitecustomize.py").write_text(BLOCKER, encoding="utf-8")
    path = os.pathsep.join(p for p in (str(tmp_path / "blocker"), os.environ.get("PYTHONPATH")) if p)
    return {**os.environ, "PYTHONPATH": path, "BLOCK_PACKAGES": ",".join(packages)}


@pytest.mark.slow
def test_caption_training_without_the_scorers_stops_before_any_work(tmp_path):
    """The issue's report: `attnkit train caption-shapes` without pycocoevalcap trained until its
    first validation and then died with a traceback; now one line before the run folder exists."""
    write_shapes(tmp_path / "shapes", {"train": 4, "valid": 2}, seed=0, size=48)
    out = tmp_path / "run"
    result = attnkit("train", "caption-shapes", "--set", f"data.dir={tmp_path / 'shapes'}", "--out", str(out), env=blocking(tmp_path, "pycocoevalcap"))
    assert result.returncode == 2, result.stderr
    assert result.stderr == (
        "attnkit: error: validation's caption BLEU-4 (train.eval_decode; off: --set train.eval_decode=false) needs pycocoevalcap, "
        "which is not installed: pip install 'attnkit[caption]'\n"
    )
    assert not out.exists() and not (tmp_path / ".attnkit-cache").exists()


def closed_stdout(*args: str) -> tuple[int, str]:
    """Run `attnkit ARGS` with its stdout a pipe whose reader has already gone (as after `| head -1`)."""
    proc = subprocess.Popen([sys.executable, "-m", "attnkit", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    proc.stdout.close()  # before attnkit writes anything: its first write meets a closed pipe, every time
    err = proc.stderr.read()
    return proc.wait(timeout=300), err


def head_1(*args: str) -> subprocess.CompletedProcess:
    """`attnkit ARGS | head -1` in a shell, with the pipeline's status being attnkit's (pipefail)."""
    command = " ".join(f"'{a}'" for a in (sys.executable, "-m", "attnkit", *args))
    return subprocess.run(["bash", "-c", f"set -o pipefail; {command} | head -1"], capture_output=True, text=True, timeout=300)


@pytest.fixture
def evalb_files() -> tuple[str, str]:
    if not (EVALB_DIR / "sample.gld").is_file():
        pytest.skip(f"{EVALB_DIR} not available")
    return str(EVALB_DIR / "sample.gld"), str(EVALB_DIR / "sample.tst")


def test_evalb_into_a_closed_pipe_is_quiet(evalb_files):
    for table in ([], ["--table"]):
        status, err = closed_stdout("evalb", *evalb_files, *table)
        assert (status, err) == (SIGPIPE_STATUS, "")
    result = head_1("evalb", *evalb_files, "--table")
    assert result.stderr == "" and result.stdout.count("\n") == 1
    assert result.returncode in (0, SIGPIPE_STATUS)  # 0 when attnkit wrote everything before head closed the pipe


@pytest.mark.slow
def test_translate_into_a_closed_pipe_is_quiet(tiny_transformer_run, tmp_path):
    src = tmp_path / "src.txt"
    src.write_text("t1 t2 t3\n" * 200, encoding="utf-8")
    status, err = closed_stdout("translate", str(tiny_transformer_run), "--input", str(src), "--beam", "1")
    assert (status, err) == (SIGPIPE_STATUS, "")
    result = head_1("translate", str(tiny_transformer_run), "--input", str(src), "--beam", "1")
    assert result.stdout.count("\n") == 1 and result.returncode in (0, SIGPIPE_STATUS)
    # When all the output fits in the pipe before head exits, translate ends normally and may still say that
    # this untrained model's sentences hit the length limit; nothing else (no "Broken pipe") may appear.
    assert [line for line in result.stderr.splitlines() if "reached the maximum length without ending" not in line] == []
