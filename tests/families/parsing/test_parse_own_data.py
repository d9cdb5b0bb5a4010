"""Parsing one's own trees, through the CLI: `attnkit init parsing` on the shipped examples (one
bracketed tree a line), `attnkit train` on the config it wrote with a tiny model, then the parser's
attention; and each bad file as one error line naming the file and the line, before a config or a
run is written (docs/your-data.md)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import yaml

from attnkit.cli import main

EXAMPLES = Path(__file__).resolve().parents[3] / "examples" / "parsing"
TINY = [
    "model.layers=1",
    "model.d_model=32",
    "model.n_heads=2",
    "model.d_ff=64",
    "train.max_steps=6",
    "train.eval_every=6",
    "decode.beam=1",
    "decode.max_len_b=30",
    "train.precision=fp32",
    "train.max_tokens=600",
]


def test_init_train_attention(tmp_path: Path) -> None:
    config, run = tmp_path / "my.yaml", tmp_path / "run"
    argv = ["init", "parsing", "--train", str(EXAMPLES / "train.txt"), "--valid", str(EXAMPLES / "valid.txt"), "--out", str(config)]
    assert main(argv) == 0
    tree = yaml.safe_load(config.read_text())
    assert tree["task"] == "parsing" and tree["data"]["train"] == str(EXAMPLES / "train.txt")
    assert "# 60 trees" in config.read_text()
    assert main(["train", str(config), "--out", str(run), *[w for s in TINY for w in ("--set", s)]]) == 0
    assert main(["attention", str(run), "the dog runs in the park .", "--out", str(tmp_path / "a.npz")]) == 0
    maps = np.load(tmp_path / "a.npz")
    assert list(maps["encoder/keys"]) == ["the", "dog", "runs", "in", "the", "park", ".", "</s>"]
    np.testing.assert_allclose(maps["cross/layer1"].sum(-1), 1.0, atol=1e-4)  # (H, T, S)


def test_unbalanced_brackets(write_file, cli_error, tmp_path: Path) -> None:
    trees = write_file(tmp_path, "t.txt", "(S (NP (DT a) (NN dog)) (VP (VBZ runs)))\n(S (NP (DT a) (NN cat)) (VP (VBZ runs))\n")
    err = cli_error(["init", "parsing", "--train", trees, "--valid", str(EXAMPLES / "valid.txt")])
    assert f"{trees}, tree 2 (line 2): unbalanced brackets" in err


def test_text_outside_a_tree_at_train(write_file, cli_error, tmp_path: Path) -> None:
    trees = write_file(tmp_path, "t.txt", "(S (NP (DT a) (NN dog)) (VP (VBZ runs)))\nthe cat runs\n")
    config = write_file(tmp_path, "c.yaml", f"task: parsing\ndata: {{train: {trees}, valid: {EXAMPLES / 'valid.txt'}}}\ntrain: {{max_steps: 1}}\n")
    err = cli_error(["train", config, "--out", str(tmp_path / "run")])
    assert f"{trees}, tree 2 (line 2): text 'the' outside brackets" in err
    assert not (tmp_path / "run" / "config.yaml").exists()  # refused before any work


def test_an_empty_file(write_file, cli_error, tmp_path: Path) -> None:
    trees = write_file(tmp_path, "t.txt", "\n")
    err = cli_error(["init", "parsing", "--train", str(EXAMPLES / "train.txt"), "--valid", trees])
    assert f"{trees}: no trees" in err


def test_bad_utf8(write_file, cli_error, tmp_path: Path) -> None:
    trees = write_file(tmp_path, "t.txt", b"(S (NP (NN dog)) (VP (VBZ runs)))\n(S (NP (NN caf\xe9)) (VP (VBZ runs)))\n")
    err = cli_error(["init", "parsing", "--train", trees, "--valid", str(EXAMPLES / "valid.txt")])
    assert f"{trees}, line 2: invalid UTF-8" in err
