"""Fault tolerance: a training run killed with SIGKILL at random points, and resumed each time, ends
with the same weights as a run that was never interrupted (CPU, same seed). After every kill the
last checkpoint loads; at the end no temporary or partial file is left in the run folder. A NaN/inf
loss skips its update and is counted; `train.max_bad_steps` of them in a row stop the run with one
error line."""

from __future__ import annotations

import json
import random
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from attnkit.artifacts.checkpoint import checkpoint_dirs, load_trainer
from attnkit.artifacts.lock import LOCK_NAME
from attnkit.cli import main
from attnkit.families import load_config, load_run
from attnkit.families.translation.task import TranslationTask
from attnkit.train.loop import train

# Checkpoints every 5 updates, so kills land in updates, in checkpoint writes and in pruning alike.
# One thread: the same float reductions in every process.
CONFIG = """\
data:
  corpus: synthetic
  synthetic: {task: reverse, vocab_size: 10, min_len: 3, max_len: 8, train_size: 2000, valid_size: 20, seed: 1234}
  tokenizer: word
model: {kind: transformer, layers: 1, d_model: 32, n_heads: 2, d_ff: 64, dropout: 0.1, norm: pre}
train: {seed: 1, threads: 1, max_tokens: 256, max_steps: 150, eval_every: 5, eval_decode: false, log_every: 1,
        keep_last: 2, schedule: {kind: inverse_sqrt, lr: 0.002, warmup: 20}}
"""
KILLS = 3


def _train_args(config: Path, out: Path) -> list[str]:
    """`attnkit train CONFIG --out OUT`, resuming once OUT holds a checkpoint."""
    return ["train", str(config), "--out", str(out), *(["--resume"] if checkpoint_dirs(out) else [])]


def _launch(config: Path, out: Path) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "attnkit", *_train_args(config, out)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


def _lines(path: Path) -> int:
    return path.read_bytes().count(b"\n") if path.exists() else 0


def _kill_while_training(proc: subprocess.Popen, metrics: Path, delay: float) -> None:
    """SIGKILL `delay` seconds after the process starts training (metrics.jsonl changes: it is cut
    back to the resumed checkpoint, or an update is logged); the process must still be running."""
    before = _lines(metrics)
    deadline = time.monotonic() + 60
    while _lines(metrics) == before and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    time.sleep(delay)
    assert proc.poll() is None, f"the run ended before it could be killed: {proc.stderr.read()}"
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    proc.stderr.close()


def _assert_last_checkpoint_loads(out: Path) -> None:
    loaded = load_run(out, "last")
    state, rng = load_trainer(loaded.checkpoint, torch.optim.Adam(loaded.model.parameters()))
    assert state["train_state"]["step"] == int(loaded.checkpoint.name.removeprefix("step_")) and "torch" in rng


def _config(tmp_path: Path) -> Path:
    config = tmp_path / "toy.yaml"
    config.write_text(CONFIG)
    return config


@pytest.mark.slow
def test_sigkill_three_times_and_resume_equals_uninterrupted(tmp_path: Path) -> None:
    config = _config(tmp_path)
    reference = train(load_config(config), tmp_path / "reference")
    out, metrics = tmp_path / "run", tmp_path / "run" / "metrics.jsonl"
    rng = random.Random(20261201)
    for _ in range(KILLS):
        _kill_while_training(_launch(config, out), metrics, rng.uniform(0.0, 0.5))
        if checkpoint_dirs(out):
            _assert_last_checkpoint_loads(out)
    assert main(_train_args(config, out)) == 0  # the last run to the end: the CLI in this process
    _assert_last_checkpoint_loads(out)

    hidden = [p for p in out.rglob("*") if (p.name.startswith(".") and p.name != LOCK_NAME) or ".tmp" in p.name]
    leftovers = [p.relative_to(out) for p in hidden]  # the run folder's lock file stays (it holds nothing)
    assert not leftovers, leftovers
    steps = [json.loads(line)["step"] for line in metrics.read_text().splitlines() if '"train"' in line]
    assert steps == list(range(1, reference.step + 1)), "metrics.jsonl: each update logged once, in order"
    name = f"step_{reference.step:08d}/model.safetensors"
    expected, got = load_file(str(tmp_path / "reference/checkpoints" / name)), load_file(str(out / "checkpoints" / name))
    assert expected.keys() == got.keys()
    for key in expected:
        assert torch.equal(expected[key], got[key]), key


def _poison(monkeypatch: pytest.MonkeyPatch, bad: Callable[[int], bool]) -> None:
    """Make the loss NaN at the updates (1-based) where `bad(update)` holds."""
    real, calls = TranslationTask.loss, []

    def loss(self, model, batch, step):
        calls.append(step)
        return real(self, model, batch, step) * (float("nan") if bad(len(calls)) else 1.0)

    monkeypatch.setattr(TranslationTask, "loss", loss)


def test_nan_updates_are_skipped_and_counted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _poison(monkeypatch, lambda update: update in (2, 3, 5))
    config = load_config(_config(tmp_path), ["train.max_steps=4", "train.max_bad_steps=3"])
    state = train(config, tmp_path / "run")
    # 7 updates were tried: 2, 3 and 5 were skipped (never 3 in a row), 4 were applied.
    assert (state.step, state.skipped_steps, state.bad_steps_in_row) == (4, 3, 0)


def test_nan_updates_in_a_row_stop_with_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys, caplog) -> None:
    _poison(monkeypatch, lambda update: True)
    capsys.readouterr()
    code = main(["train", str(_config(tmp_path)), "--out", str(tmp_path / "run"), "--set", "train.max_bad_steps=3"])
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip() and "%|" not in line]
    assert code == 2 and len(err) == 1, err
    assert err[0].startswith("attnkit: error: loss was NaN/inf for 3 steps in a row (step 1); lower the learning rate")
    assert caplog.text.count("loss is nan, update skipped") == 2
