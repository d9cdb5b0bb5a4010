"""`attnkit train FAMILY --train ... --valid ... --out RUN`: init's checks and config, then training,
in one command; its run resumes as a YAML run does; the refusals are one line before any work."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from attnkit.cli import build_parser, main
from attnkit.commands.training import _train_command
from own_data import EXAMPLES, sets

TEXTS = EXAMPLES / "translation"
FILES = ["--train", str(TEXTS / "train.en"), str(TEXTS / "train.de"), "--valid", str(TEXTS / "valid.tsv")]


def steps(run: Path) -> list[int]:
    return [json.loads(line)["step"] for line in (run / "metrics.jsonl").read_text().splitlines() if json.loads(line)["kind"] == "valid"]


def test_the_run_keeps_init_s_config_and_resumes_either_way(tmp_path: Path, capsys) -> None:
    run = tmp_path / "run"
    assert main(["train", "translation", *FILES, "--out", str(run), *sets("translation", "train.eval_every=2", "train.max_steps=2")]) == 0
    config = yaml.safe_load((run / "config.yaml").read_text())
    assert config["data"]["train"] == {"src": str(TEXTS / "train.en"), "tgt": str(TEXTS / "train.de")}
    assert config["data"]["tokenizer"] == "word" and config["model"]["d_model"] == 32  # init's choice, then --set
    assert main(["train", "translation", *FILES, "--out", str(run), "--resume", *sets("translation", "train.eval_every=2", "train.max_steps=4")]) == 0
    assert main(["train", str(run / "config.yaml"), "--out", str(run), "--resume", "--set", "train.max_steps=6"]) == 0
    assert steps(run) == [2, 4, 6]
    assert main(["report", str(run), "a dog runs .", "--out", str(tmp_path / "r.html")]) == 0


def test_the_command_to_resume_repeats_the_files() -> None:
    args = build_parser().parse_args(["train", "translation", *FILES, "--src-column", "en", "--out", "r", "--set", "train.max_steps=2"])
    files = " ".join(FILES)
    assert _train_command(args, resume=True) == f"attnkit train translation {files} --src-column en --out r --set train.max_steps=2 --resume"


def test_a_bad_file_is_refused_before_any_work(write_file, cli_error, tmp_path: Path) -> None:
    src, tgt = write_file(tmp_path, "a.en", "a b\nc d\ne f\n"), write_file(tmp_path, "a.de", "b a\nd c\n")
    err = cli_error(["train", "translation", "--train", src, tgt, "--valid", str(TEXTS / "valid.tsv"), "--out", str(tmp_path / "run")])
    assert f"{src} has 3 lines but {tgt} has 2" in err
    assert not (tmp_path / "run").exists()


def test_a_mistyped_family_gets_did_you_mean(cli_error, tmp_path: Path) -> None:
    err = cli_error(["train", "translatoin", *FILES, "--out", str(tmp_path / "run")])
    assert "translatoin: no such config file, preset or family; did you mean translation?" in err


def test_another_family_s_option_is_refused(cli_error, tmp_path: Path) -> None:
    err = cli_error(["train", "translation", *FILES, "--label-column", "y", "--out", str(tmp_path / "run")])
    assert "--label-column: an option of attnkit train classification, not of attnkit train translation" in err


def test_files_beside_a_config_file_are_refused(cli_error, tmp_path: Path) -> None:
    err = cli_error(["train", "toy-reverse", *FILES, "--out", str(tmp_path / "run")])
    assert "--train: your files go with a family name (translation, classification, parsing, captioning) for CONFIG" in err


def test_a_family_s_required_option(cli_error, tmp_path: Path) -> None:
    err = cli_error(["train", "captioning", "--captions", "dataset.json", "--out", str(tmp_path / "run")])
    assert "attnkit train captioning: --images is required" in err
