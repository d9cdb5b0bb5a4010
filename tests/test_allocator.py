"""`attnkit train` re-executes itself with jemalloc preloaded when it is installed (allocator.py)."""

from __future__ import annotations

import ctypes.util
import os
import subprocess
import sys

import pytest

from attnkit import allocator
from attnkit.families import load_run


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
    sets = ["train.max_steps=1", "train.eval_every=1", "train.eval_decode=false", "data.synthetic.train_size=200"]
    cmd = [sys.executable, "-m", "attnkit", "-v", "train", "toy-reverse", "--out", str(tmp_path / "run")]
    result = subprocess.run(cmd + [a for s in sets for a in ("--set", s)], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert "memory allocator: libjemalloc" in result.stderr


CACHE_VARIABLES = ("ONEDNN_PRIMITIVE_CACHE_CAPACITY", "LRU_CACHE_CAPACITY")


@pytest.fixture
def cache_env(monkeypatch) -> dict[str, str]:
    """A copy of the environment without the caches' variables, restored after the test."""
    copy = {k: v for k, v in os.environ.items() if k not in CACHE_VARIABLES}
    monkeypatch.setattr(os, "environ", copy)
    return copy


def test_kernel_caches_are_capped_unless_the_user_set_them(cache_env) -> None:
    cache_env["LRU_CACHE_CAPACITY"] = "8"  # the user's own value
    allocator.limit_primitive_cache(256)
    assert cache_env["ONEDNN_PRIMITIVE_CACHE_CAPACITY"] == "256" and cache_env["LRU_CACHE_CAPACITY"] == "8"


def test_loading_a_run_caps_the_kernel_caches(cache_env, tiny_transformer_run) -> None:
    load_run(tiny_transformer_run)
    assert cache_env["ONEDNN_PRIMITIVE_CACHE_CAPACITY"] == cache_env["LRU_CACHE_CAPACITY"] == "64"


CHILD = """
import sys
import torch
from attnkit.allocator import limit_primitive_cache
limit_primitive_cache(int(sys.argv[1]))  # as in `attnkit train`: torch imported, no matmul run yet
torch.set_num_threads(1)
w = torch.randn(2048, 512, dtype=torch.bfloat16)
rss = lambda: int(next(l for l in open("/proc/self/status") if l.startswith("VmRSS")).split()[1]) // 1024
for rows in range(1, 9):
    torch.nn.functional.linear(torch.randn(rows, 512, dtype=torch.bfloat16), w)
before = rss()
for rows in range(9, 209):  # 200 new shapes
    torch.nn.functional.linear(torch.randn(rows, 512, dtype=torch.bfloat16), w)
print(rss() - before)
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/status")
def test_capped_caches_keep_memory_flat_over_new_matmul_shapes() -> None:
    """200 bf16 matmul shapes: the kernels of each stay in memory with the libraries' default caps
    (1,024; about 140 MB here), not with a cap of 8."""

    env = {k: v for k, v in os.environ.items() if k not in CACHE_VARIABLES}

    def growth_mb(capacity: int) -> int:
        out = subprocess.run([sys.executable, "-c", CHILD, str(capacity)], capture_output=True, text=True, timeout=120, env=env)
        assert out.returncode == 0, out.stderr
        return int(out.stdout)

    default = growth_mb(1024)
    if default < 40:
        pytest.skip(f"bf16 matmuls do not go through oneDNN on this CPU (memory grew by {default} MB)")
    assert growth_mb(8) < default / 3
