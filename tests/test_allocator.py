"""`attnkit train` re-executes itself with jemalloc preloaded when it is installed (allocator.py)."""

from __future__ import annotations

import ctypes.util
import subprocess
import sys

import pytest

from attnkit import allocator


@pytest.fixture
def found(monkeypatch) -> None:
    monkeypatch.setattr(ctypes.util, "find_library", lambda name: "libjemalloc.so.2" if name == "jemalloc" else None)
    monkeypatch.setattr(sys, "platform", "linux")


def test_preloads_jemalloc_and_keeps_other_settings(found) -> None:
    env = allocator.jemalloc_env({"LD_PRELOAD": "libother.so", "PATH": "/bin"})
    assert env["LD_PRELOAD"] == "libother.so libjemalloc.so.2" and env["PATH"] == "/bin"
    assert env["MALLOC_CONF"] == allocator.MALLOC_CONF and env[allocator.MARKER] == "libjemalloc.so.2"
    assert allocator.jemalloc_env({"MALLOC_CONF": "narenas:2"})["MALLOC_CONF"] == "narenas:2"  # the user's wins


@pytest.mark.parametrize("environ", [{"ATTNKIT_ALLOCATOR": "system"}, {"LD_PRELOAD": "/opt/libjemalloc.so"}])
def test_opt_out_and_already_preloaded_keep_the_allocator(found, environ: dict) -> None:
    assert allocator.jemalloc_env(environ) is None


def test_nothing_to_do_without_the_library(monkeypatch) -> None:
    monkeypatch.setattr(ctypes.util, "find_library", lambda name: None)
    assert allocator.jemalloc_env({}) is None


@pytest.mark.skipif(ctypes.util.find_library("jemalloc") is None, reason="libjemalloc2 is not installed (.ci/run installs it)")
def test_train_from_the_command_line_runs_on_jemalloc(tmp_path) -> None:
    sets = ["train.max_steps=1", "train.eval_every=1", "train.eval_bleu=false", "data.synthetic.train_size=200"]
    cmd = [sys.executable, "-m", "attnkit", "-v", "train", "toy-reverse", "--out", str(tmp_path / "run")]
    result = subprocess.run(cmd + [a for s in sets for a in ("--set", s)], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert "memory allocator: libjemalloc" in result.stderr
