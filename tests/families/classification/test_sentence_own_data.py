"""Sentence classification on one's own files, through the CLI: `attnkit init classification` on
the shipped examples (a CSV of sentences, JSONL sentence pairs), `attnkit train` on the config it
wrote with a tiny model, then the hops' attention; and each bad file as one error line naming the
file and the line, before a config or a run is written (docs/your-data.md)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
import yaml

from attnkit.cli import main
from attnkit.families.classification.config import SentenceRun
from attnkit.families.classification.task import ClassificationTask

EXAMPLES = Path(__file__).resolve().parents[3] / "examples" / "classification"
TINY = ["model.embed_dim=16", "model.u=16", "model.d_a=16", "model.r=2", "model.mlp_hidden=32", "train.max_steps=6", "train.eval_every=6"]


def sets(values: list[str]) -> list[str]:
    return [word for value in values for word in ("--set", value)]


@pytest.mark.parametrize(
    ("train", "valid", "columns", "text"),
    [
        ("train.csv", "valid.csv", ("text", None, "label"), "the film was great"),
        ("pairs-train.jsonl", "pairs-valid.jsonl", ("premise", "hypothesis", "label"), "the dog runs in the park .\tthe dog is running ."),
    ],
    ids=["csv-sentences", "jsonl-pairs"],
)
def test_init_train_attention(tmp_path: Path, train: str, valid: str, columns: tuple, text: str) -> None:
    config, run = tmp_path / "my.yaml", tmp_path / "run"
    assert main(["init", "classification", "--train", str(EXAMPLES / train), "--valid", str(EXAMPLES / valid), "--out", str(config)]) == 0
    tree = yaml.safe_load(config.read_text())
    assert (tree["data"]["text_column"], tree["data"].get("text2_column"), tree["data"]["label_column"]) == columns
    assert tree["model"]["pair"] == ("factor" if columns[1] else "none")
    assert main(["train", str(config), "--out", str(run), *sets(TINY)]) == 0
    assert main(["attention", str(run), text, "--out", str(tmp_path / "a.npz")]) == 0
    maps = np.load(tmp_path / "a.npz")
    hops = maps["hops/layer1"]  # (1, R, T): each hop a distribution over the words
    assert hops.shape[1] == 2
    np.testing.assert_allclose(hops.sum(-1), 1.0, atol=1e-4)


def test_no_label_column(write_file, cli_error, tmp_path: Path) -> None:
    table = write_file(tmp_path, "t.csv", "text,sentiment\ngood film,positive\n")
    err = cli_error(["init", "classification", "--train", table, "--valid", str(EXAMPLES / "valid.csv")])
    assert f"{table}, line 1: no label column (the columns are text, sentiment); name it with --label-column" in err


def test_a_missing_word_vector_file_is_refused_before_any_work(cli_error, tmp_path: Path) -> None:
    sets_ = ["--set", f"model.word_vectors={tmp_path}/glove.txt", "--set", "model.embed_dim=8"]
    err = cli_error(["train", "jw-sst2", "--out", str(tmp_path / "run"), *sets_])
    assert err == f"attnkit: error: {tmp_path}/glove.txt: no such file (model.word_vectors)"
    assert not (tmp_path / "run" / "config.yaml").exists() and not (tmp_path / ".attnkit-cache").exists()


def test_a_named_label_column_missing_at_train(write_file, cli_error, tmp_path: Path) -> None:
    table = write_file(tmp_path, "t.csv", "text,sentiment\ngood film,positive\n")
    config = write_file(tmp_path, "c.yaml", f"data: {{corpus: labelled, train: {table}, valid: {EXAMPLES / 'valid.csv'}}}\n"
                    "model: {kind: sase, embed_dim: 8, u: 8, d_a: 8, r: 1, mlp_hidden: 8}\ntrain: {max_steps: 1}\n")  # fmt: skip
    err = cli_error(["train", config, "--out", str(tmp_path / "run")])
    assert f"{table}, line 1: no column 'label' (the header has text, sentiment)" in err
    assert not (tmp_path / "run" / "config.yaml").exists()  # refused before any work


def test_an_empty_text(write_file, cli_error, tmp_path: Path) -> None:
    table = write_file(tmp_path, "t.csv", 'text,label\ngood film,positive\n"  ",negative\n')
    err = cli_error(["init", "classification", "--train", table, "--valid", str(EXAMPLES / "valid.csv")])
    assert f"{table}, line 3: empty text in column 'text'" in err


def test_a_validation_label_training_never_saw(write_file, cli_error, tmp_path: Path) -> None:
    table = write_file(tmp_path, "v.jsonl", '{"text": "a fine film", "label": "positive"}\n{"text": "so so", "label": "mixed"}\n')
    err = cli_error(["init", "classification", "--train", str(EXAMPLES / "train.csv"), "--valid", table])
    assert f"{table}, line 2: unknown label 'mixed' (known: negative, positive)" in err


def test_a_quoted_csv_field_over_two_lines_keeps_the_line_numbers(write_file, cli_error, tmp_path: Path) -> None:
    table = write_file(tmp_path, "t.csv", 'text,label\n"a film\nin two lines",positive\nbad,\n')
    err = cli_error(["init", "classification", "--train", table, "--valid", str(EXAMPLES / "valid.csv")])
    assert f"{table}, line 4: empty label in column 'label'" in err


def test_bad_utf8(write_file, cli_error, tmp_path: Path) -> None:
    table = write_file(tmp_path, "t.tsv", b"text\tlabel\ngood\tpositive\nb\xe4d\tnegative\n")
    err = cli_error(["init", "classification", "--train", table, "--valid", str(EXAMPLES / "valid.csv")])
    assert f"{table}, line 3: invalid UTF-8" in err


def test_a_label_with_control_characters_keeps_the_config_yaml(tmp_path: Path) -> None:
    """Found by tests/data/test_reader_properties.py: a label with ESC (or U+0085, a YAML line break) written raw
    into init's comment made the config unreadable (PyYAML's traceback)."""
    train = tmp_path / "t.jsonl"
    train.write_text('{"text": "good film", "label": "pos\\u001b"}\n{"text": "bad film", "label": "neg\\u0085x: 1"}\n', encoding="utf-8")
    config = tmp_path / "my.yaml"
    assert main(["init", "classification", "--train", str(train), "--valid", str(train), "--out", str(config)]) == 0
    text = config.read_text(encoding="utf-8")
    assert "labels 'neg\\x85x: 1', 'pos\\x1b'" in text and yaml.safe_load(text)["data"]["label_column"] == "label"


def test_an_unknown_label_names_the_known_ones_on_one_short_line(tmp_path: Path, cli_error) -> None:
    """Found by tests/data/test_reader_properties.py: a quote left open swallowed the rest of the training file
    into one label, and the validation file's error quoted it whole, over hundreds of lines."""
    train = tmp_path / "t.csv"
    train.write_text('text,label\ngood film,pos\nbad film,"neg\n' + "more,pos\n" * 300, encoding="utf-8")
    err = cli_error(["init", "classification", "--train", str(train), "--valid", str(EXAMPLES / "valid.csv")])
    assert "\n" not in err.strip() and len(err) < 500
    assert f"{EXAMPLES / 'valid.csv'}, line 2: unknown label 'positive' (known: 'neg\\nmore,pos\\nmore,pos" in err and "..., pos)" in err


@pytest.mark.parametrize("missing", ["random", "zero"])
def test_word_vectors_start_the_embedding_and_the_log_counts_them(tmp_path: Path, caplog, missing: str) -> None:
    vectors = tmp_path / "vectors.txt"
    vectors.write_text("film 1 2 3 4\nthe -1 0 0.5 2\nnowhere 9 9 9 9\n", encoding="utf-8")
    run = SentenceRun.model_validate({
        "data": {"corpus": "labelled", "train": str(EXAMPLES / "train.csv"), "valid": str(EXAMPLES / "valid.csv"), "drop_symbols": True},
        "model": {"kind": "sase", "embed_dim": 4, "u": 4, "d_a": 4, "r": 1, "mlp_hidden": 0, "word_vectors": str(vectors), "missing_vectors": missing},
        "train": {"max_steps": 1},
    })  # fmt: skip
    task = ClassificationTask(run, tmp_path / "run", None)
    tokens = task.vocabs.vocab.to_json()["tokens"]
    with caplog.at_level("INFO", logger="attnkit"):
        weight = task.build_model().embedding.weight.detach()  # (V, 4)
    assert f"{vectors}: vectors for 2 of {len(tokens)} words" in caplog.text
    torch.testing.assert_close(weight[[tokens.index("film"), tokens.index("the")]], torch.tensor([[1.0, 2, 3, 4], [-1, 0, 0.5, 2]]))
    rest = weight[[i for i, t in enumerate(tokens) if t not in ("film", "the", "<pad>")]]  # (V - 3, 4)
    assert (rest == 0).all() if missing == "zero" else (rest != 0).all()
    assert (weight[tokens.index("<pad>")] == 0).all()
