"""Progress off a terminal (a log file, a pipe): plain lines, never carriage-return frames."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from attnkit import progress

SRC = Path(__file__).resolve().parent.parent / "src"


def test_off_a_terminal_a_bar_writes_whole_lines(monkeypatch, capsys):
    monkeypatch.setenv("TQDM_MININTERVAL", "0")  # a line at every update
    with progress.counter(3, "testing", unit="sent") as bar:
        for _ in range(3):
            bar.update(1)
    err = capsys.readouterr().err
    assert "\r" not in err
    lines = err.splitlines()
    assert lines[0].startswith("testing:   0% 0/3") and lines[-1].startswith("testing: 100% 3/3")
    assert len(lines) == len(set(lines)) >= 2  # the start and the end (closing repeats no count)


def test_off_a_terminal_a_short_step_writes_nothing(capsys):
    with progress.counter(3, "quick") as bar:
        bar.update(3)
    assert capsys.readouterr().err == ""


def test_training_into_a_pipe_logs_lines_for_steps_and_validation(tmp_path):
    env = {**os.environ, "PYTHONPATH": f"{SRC}{os.pathsep}{os.environ.get('PYTHONPATH', '')}", "TQDM_MININTERVAL": "0", "OMP_NUM_THREADS": "1"}
    sets = ["--set", "train.max_steps=4", "--set", "train.eval_every=4", "--set", "train.log_every=2", "--set", "data.synthetic.train_size=200",
            "--set", "data.synthetic.valid_size=20"]  # fmt: skip
    done = subprocess.run([sys.executable, "-m", "attnkit", "train", "toy-reverse", "--out", str(tmp_path / "run"), *sets],
                          capture_output=True, text=True, env=env, timeout=240)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "\r" not in done.stderr
    lines = done.stderr.splitlines()
    assert any(line.startswith("train: ") and "4/4" in line for line in lines)
    assert any(line.startswith("validating: ") and "20/20" in line for line in lines)
    assert any(line.startswith("preparing data: ") for line in lines)
