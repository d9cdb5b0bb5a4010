"""Progress off a terminal (a log file, a pipe): plain lines, never carriage-return frames."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from attnkit import progress
from attnkit.cli import main
from own_data import EXAMPLES, sets

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


def test_training_off_a_terminal_logs_lines_for_steps_and_validation(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("TQDM_MININTERVAL", "0")  # a line at every update
    sets = ["--set", "train.max_steps=4", "--set", "train.eval_every=4", "--set", "train.log_every=2", "--set", "data.synthetic.train_size=200",
            "--set", "data.synthetic.valid_size=20"]  # fmt: skip
    capsys.readouterr()
    assert main(["train", "toy-reverse", "--out", str(tmp_path / "run"), *sets]) == 0
    err = capsys.readouterr().err
    assert "\r" not in err
    lines = err.splitlines()
    assert any(line.startswith("train: ") and "4/4" in line for line in lines)
    assert any(line.startswith("validating: ") and "20/20" in line for line in lines)
    assert any(line.startswith("preparing data: ") for line in lines)


FILES = {  # `attnkit train FAMILY FILES`, for the families whose data preparation and validation have bars here
    "classification": ["--train", f"{EXAMPLES}/classification/train.csv", "--valid", f"{EXAMPLES}/classification/valid.csv"],
    "parsing": ["--train", f"{EXAMPLES}/parsing/train.txt", "--valid", f"{EXAMPLES}/parsing/valid.txt"],
    "captioning": ["--images", f"{EXAMPLES}/captioning/images", "--captions", f"{EXAMPLES}/captioning/dataset.json"],
}
CHART = "model={kind: chart, layers: 1, d_model: 16, n_heads: 2, d_kv: 8, d_ff: 16, d_char: 8, d_label_hidden: 8}"


@pytest.mark.parametrize(("family", "more"), [("classification", []), ("parsing", []), ("parsing", [CHART]), ("captioning", ["train.eval_decode=true"])],
                         ids=["classification", "parsing", "chart", "captioning"])  # fmt: skip
def test_each_family_s_data_preparation_and_validation_write_lines_off_a_terminal(family, more, tmp_path, monkeypatch, capsys):
    from attnkit.cli import build_parser
    from attnkit.commands.init import family_run
    from attnkit.families import run_family_of

    monkeypatch.setenv("TQDM_MININTERVAL", "0")  # a line at every update
    args = build_parser().parse_args(["train", family, *FILES[family], "--out", str(tmp_path / "run"), *sets(family, *more)])
    run = family_run(args, args.family_files)
    capsys.readouterr()
    task = run_family_of(run).task(run, tmp_path / "run", None)
    task.validate(task.build_model().eval(), torch.device("cpu"))
    err = capsys.readouterr().err
    assert "\r" not in err
    lines = err.splitlines()
    assert any(line.startswith("preparing data: 100% 4/4") for line in lines), err
    assert any(line.startswith(("validating: 100%", "validation loss: 100%")) for line in lines), err
