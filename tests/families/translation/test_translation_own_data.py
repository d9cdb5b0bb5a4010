"""Translation on one's own files, through the CLI: `attnkit init translation` on the shipped
examples (two aligned text files, a TSV table, JSONL), `attnkit train` on the config it wrote with a
tiny model, then the run's attention; and each bad file as one error line naming the file and the
line, before a config or a run is written (docs/your-data.md)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import yaml

from attnkit.cli import main

EXAMPLES = Path(__file__).resolve().parents[3] / "examples" / "translation"
TINY = [
    "model.layers=1",
    "model.d_model=32",
    "model.n_heads=2",
    "model.d_ff=64",
    "train.max_steps=6",
    "train.eval_every=6",
    "train.max_tokens=600",
    "train.precision=fp32",
    "decode.max_len_b=10",
]


def sets(values: list[str]) -> list[str]:
    return [word for value in values for word in ("--set", value)]


@pytest.mark.parametrize(
    ("train", "valid"),
    [
        (["train.en", "train.de"], ["valid.en", "valid.de"]),
        (["train.tsv"], ["valid.jsonl"]),
    ],
    ids=["aligned-text", "tables"],
)
def test_init_train_attention(tmp_path: Path, train: list[str], valid: list[str]) -> None:
    config, run = tmp_path / "my.yaml", tmp_path / "run"
    argv = ["init", "translation", "--train", *(str(EXAMPLES / f) for f in train), "--valid", *(str(EXAMPLES / f) for f in valid)]
    assert main([*argv, "--out", str(config)]) == 0
    tree = yaml.safe_load(config.read_text())
    assert tree["data"]["tokenizer"] == "word"  # 60 pairs: too few for subwords
    assert "# 60 training pairs" in config.read_text()
    assert main(["train", str(config), "--out", str(run), *sets(TINY)]) == 0
    assert (run / "config.yaml").is_file() and any((run / "checkpoints").iterdir())
    assert main(["attention", str(run), "the dog runs in the park .", "--out", str(tmp_path / "a.npz")]) == 0
    maps = np.load(tmp_path / "a.npz")
    cross = maps["cross/layer1"]  # (H, T, S)
    assert list(maps["cross/keys"]) == ["the", "dog", "runs", "in", "the", "park", ".", "</s>"]
    np.testing.assert_allclose(cross.sum(-1), 1.0, atol=1e-4)


def test_init_prints_to_stdout_what_train_accepts(tmp_path: Path, capsys) -> None:
    assert main(["init", "translation", "--train", str(EXAMPLES / "train.jsonl"), "--valid", str(EXAMPLES / "valid.tsv")]) == 0
    text = capsys.readouterr().out
    (tmp_path / "my.yaml").write_text(text)
    assert main(["config", str(tmp_path / "my.yaml")]) == 0
    assert yaml.safe_load(capsys.readouterr().out)["data"]["train"] == str(EXAMPLES / "train.jsonl")


def _files_config(tmp: Path, train: str) -> str:
    (tmp / "c.yaml").write_text(f"data: {{corpus: files, tokenizer: word, train: {train}, valid: {EXAMPLES / 'valid.tsv'}}}\n"
                            "model: {layers: 1, d_model: 16, n_heads: 2, d_ff: 32}\ntrain: {max_steps: 1}\n")  # fmt: skip
    return str(tmp / "c.yaml")


def test_unequal_line_counts(write_file, cli_error, tmp_path: Path) -> None:
    src, tgt = write_file(tmp_path, "a.en", "a b\nc d\ne f\n"), write_file(tmp_path, "a.de", "b a\nd c\n")
    err = cli_error(["init", "translation", "--train", src, tgt, "--valid", str(EXAMPLES / "valid.tsv")])
    assert f"{src} has 3 lines but {tgt} has 2" in err


def test_an_empty_side(write_file, cli_error, tmp_path: Path) -> None:
    src, tgt = write_file(tmp_path, "a.en", "a b\nc d\ne f\n"), write_file(tmp_path, "a.de", "b a\n\nf e\n")
    err = cli_error(["init", "translation", "--train", src, tgt, "--valid", str(EXAMPLES / "valid.tsv")])
    assert f"{tgt}, line 2: empty line (its pair in {src} is not)" in err


def test_a_table_without_the_target_column(write_file, cli_error, tmp_path: Path) -> None:
    table = write_file(tmp_path, "t.tsv", "src\tde\na b\tb a\n")
    err = cli_error(["train", _files_config(tmp_path, table), "--out", str(tmp_path / "run")])
    assert f"{table}, line 1: no column 'tgt' (the header has src, de)" in err
    assert not (tmp_path / "run" / "config.yaml").exists()  # refused before any work


def test_an_empty_cell_in_a_jsonl_table(write_file, cli_error, tmp_path: Path) -> None:
    table = write_file(tmp_path, "t.jsonl", '{"src": "a b", "tgt": "b a"}\n{"src": "c d", "tgt": " "}\n')
    err = cli_error(["train", _files_config(tmp_path, table), "--out", str(tmp_path / "run")])
    assert f"{table}, line 2: empty text in column 'tgt'" in err


def test_bad_utf8(write_file, cli_error, tmp_path: Path) -> None:
    src, tgt = write_file(tmp_path, "a.en", b"a b\nc \xff d\n"), write_file(tmp_path, "a.de", "b a\nd c\n")
    err = cli_error(["init", "translation", "--train", src, tgt, "--valid", str(EXAMPLES / "valid.tsv")])
    assert f"{src}, line 2: invalid UTF-8" in err
