"""One owner per run folder: while a real `attnkit train` process trains into a folder, a second run into it
is refused with one line naming the folder and the first run's pid (and the first run finishes unharmed); a run
killed with SIGKILL holds nothing, so `--resume` works at once. The second run and the resumed one are the CLI
called in this process (another process than the first; a fresh interpreter would only add its imports' seconds)."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from test_faults import CONFIG, _assert_last_checkpoint_loads, _lines

from attnkit.cli import main

STEPS = 60


def _train(config: Path, out: Path, *extra: str) -> list[str]:
    return ["train", str(config), "--out", str(out), "--set", f"train.max_steps={STEPS}", *extra]


def _start_training(config: Path, out: Path, *extra: str) -> subprocess.Popen:
    """Start a run and return once it has logged an update (it holds the folder by then)."""
    proc = subprocess.Popen([sys.executable, "-m", "attnkit", *_train(config, out, *extra)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while _lines(out / "metrics.jsonl") == 0:
        assert proc.poll() is None and time.monotonic() < deadline, proc.stderr.read() if proc.poll() is not None else "no update in 60 s"
        time.sleep(0.02)
    return proc


def _errors(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.strip() and "%|" not in line]


@pytest.mark.slow
def test_a_second_train_into_a_running_folder_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config, out = tmp_path / "toy.yaml", tmp_path / "run"
    config.write_text(CONFIG)
    first = _start_training(config, out)
    first.send_signal(signal.SIGSTOP)  # paused, so it is certainly still running while the second tries
    try:
        for extra in ((), ("--resume",)):
            status = main(_train(config, out, *extra))
            lines = _errors(capsys.readouterr().err)
            assert status == 2 and len(lines) == 1, lines
            assert lines[0].startswith(f"attnkit: error: {out}: in use by pid {first.pid} on host "), lines[0]
    finally:
        first.send_signal(signal.SIGCONT)
    _, stderr = first.communicate(timeout=120)
    assert first.returncode == 0, stderr
    steps = [json.loads(line)["step"] for line in (out / "metrics.jsonl").read_text().splitlines() if '"train"' in line]
    assert steps == list(range(1, STEPS + 1))  # every update logged once, by the first run alone
    _assert_last_checkpoint_loads(out)


@pytest.mark.slow
def test_a_sigkilled_run_resumes_at_once(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config, out = tmp_path / "toy.yaml", tmp_path / "run"
    config.write_text(CONFIG)
    first = _start_training(config, out, "--set", "train.eval_every=2")
    while not list((out / "checkpoints").glob("step_*")):  # killed after its first checkpoint
        assert first.poll() is None, first.stderr.read()
        time.sleep(0.02)
    first.send_signal(signal.SIGKILL)
    first.wait(timeout=30)
    first.stderr.close()
    assert main(_train(config, out, "--resume")) == 0
    assert f"trained {STEPS} steps" in capsys.readouterr().out
    _assert_last_checkpoint_loads(out)
