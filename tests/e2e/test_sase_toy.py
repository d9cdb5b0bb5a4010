"""Self-attentive sentence classifier end to end through the CLI: train on a synthetic keyword task
(one word, "good" or "bad", decides the label), then classify, embed, evaluate and explain; bad input
gives one clear error line; a resumed run equals an uninterrupted one."""

import json
import random
import re

import numpy as np
import pytest
import torch
import yaml
from safetensors.torch import load_file

from attnkit.artifacts.runs import read_run, write_run
from attnkit.cli import main
from attnkit.data.tokenizers import WordTokenizer
from attnkit.data.vocab import Vocabulary
from attnkit.families import FAMILIES, validate_run
from attnkit.families.translation.codec import Vocabs
from attnkit.train.loop import train

FILLER = [f"w{i}" for i in range(20)]


def keyword_rows(n: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    rows = []
    for _ in range(n):
        words = rng.choices(FILLER, k=rng.randint(3, 8))
        label = rng.choice(["pos", "neg"])
        words.insert(rng.randint(0, len(words)), "good" if label == "pos" else "bad")
        rows.append(f"{' '.join(words)}\t{label}\n")
    return rows


def config(tmp_path, **train):
    (tmp_path / "train.tsv").write_text("sentence\tlabel\n" + "".join(keyword_rows(600, 1)))
    (tmp_path / "valid.tsv").write_text("sentence\tlabel\n" + "".join(keyword_rows(100, 2)))
    tree = {
        "data": {"corpus": "labelled", "train": str(tmp_path / "train.tsv"), "valid": str(tmp_path / "valid.tsv"), "text_column": "sentence"},
        "model": {"kind": "sase", "embed_dim": 16, "u": 16, "d_a": 16, "r": 2, "mlp_hidden": 32, "dropout": 0.0, "coef": 0.01},
        "train": {"threads": 1, "max_tokens": 400, "max_sentences": 32, "betas": [0.9, 0.999], "eps": 1e-8,
                  "schedule": {"kind": "constant", "lr": 0.005}, "max_steps": 150, "eval_every": 75,
                  "early_stopping": "accuracy", "log_every": 25, **train},
    }  # fmt: skip
    path = tmp_path / "keyword.yaml"
    path.write_text(yaml.safe_dump(tree))
    return path


@pytest.fixture(scope="module")
def keyword_run(tmp_path_factory):
    folder = tmp_path_factory.mktemp("sase")
    out = folder / "run"
    assert main(["train", str(config(folder)), "--out", str(out)]) == 0
    return out


def test_trains_to_separate_the_keyword_task(keyword_run):
    records = [json.loads(line) for line in (keyword_run / "metrics.jsonl").read_text().splitlines()]
    valid = [r for r in records if r["kind"] == "valid"]
    assert valid[-1]["accuracy"] >= 0.95 and valid[-1]["macro_f1"] >= 0.95
    assert {"loss", "penalty", "overlap"} <= valid[-1].keys()
    assert "examples" in next(r for r in records if r["kind"] == "train")
    best = json.loads((keyword_run / "best.json").read_text())
    assert best["best"] == max(r["accuracy"] for r in valid)  # early stopping on accuracy
    _, vocabs = read_run(keyword_run, FAMILIES["classification"])
    assert vocabs.labels.labels == ("neg", "pos") and "good" in vocabs.vocab.to_json()["tokens"]


def test_classify_prints_labels_and_attends_to_the_keyword(keyword_run, tmp_path, capsys):
    lines = ["w1 w2 good w3 w4", "bad w5 w6 w7", "w8 w9 w10 w11 w12 bad"]
    src = tmp_path / "in.txt"
    src.write_text("".join(line + "\n" for line in lines))
    capsys.readouterr()
    assert main(["classify", str(keyword_run), "--input", str(src)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert [line.split("\t")[0] for line in out] == ["pos", "neg", "neg"]
    probs = dict(field.split("=") for field in out[0].split("\t")[1].split())
    assert probs.keys() == {"neg", "pos"} and sum(map(float, probs.values())) == pytest.approx(1.0, abs=1e-3)
    assert main(["classify", str(keyword_run), "--input", str(src), "--jsonl"]) == 0
    records = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    for record, line in zip(records, lines):
        assert record["tokens"] == line.split()
        a = np.array(record["attention"])  # (R, n)
        assert a.shape == (2, len(record["tokens"])) and np.allclose(a.sum(1), 1, atol=1e-5)
        assert record["tokens"][int(a.sum(0).argmax())] in ("good", "bad")


def test_embed_writes_r_times_2u_or_the_hop_mean(keyword_run, tmp_path, capsys):
    src = tmp_path / "in.txt"
    src.write_text("w1 good\nbad w2 w3\n")
    assert main(["embed", str(keyword_run), "--input", str(src), "--out", str(tmp_path / "m.npy")]) == 0
    assert main(["embed", str(keyword_run), "--input", str(src), "--out", str(tmp_path / "mean.npy"), "--mean-hops"]) == 0
    m, mean = np.load(tmp_path / "m.npy"), np.load(tmp_path / "mean.npy")
    assert m.shape == (2, 2 * 32) and mean.shape == (2, 32)  # r = 2 hops of 2u = 32
    np.testing.assert_allclose(m.reshape(2, 2, 32).mean(1), mean, atol=1e-6)


def test_evaluate_prints_accuracy_f1_and_confusion(keyword_run, tmp_path, capsys):
    data = tmp_path / "test.tsv"
    data.write_text("sentence\tlabel\n" + "".join(keyword_rows(50, 3)))
    capsys.readouterr()
    assert main(["evaluate", str(keyword_run), "--labelled", str(data)]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["examples"] == 50 and report["accuracy"] >= 0.95 and report["labels"] == ["neg", "pos"]
    assert sum(map(sum, report["confusion"])) == 50
    assert report["accuracy"] == pytest.approx((report["confusion"][0][0] + report["confusion"][1][1]) / 50)


def test_explain_writes_html_and_png(keyword_run, tmp_path, capsys):
    html, png = tmp_path / "e.html", tmp_path / "e.png"
    assert main(["explain", str(keyword_run), "w3 good <w4>", "--out", str(html), "--out", str(png)]) == 0
    page = html.read_text()
    (data,) = re.findall(r'<script type="application/json" id="attention-data">(.*?)</script>', page, re.S)
    (record,) = json.loads(data)  # the report page's record: the hops over the words the model read
    assert record["source"] == "w3 good <w4>" and record["maps"]["hops"]["rows"][0] == "hop 1" and "<" in record["maps"]["hops"]["cols"]
    assert not re.search(r"<(script|link|img)[^>]+(src|href)=\"(?!data:)", page) and png.read_bytes()[:4] == b"\x89PNG"  # offline: all inline


@pytest.mark.parametrize(
    "args, data, message",
    [
        (["evaluate", "RUN", "--labelled", "DATA"], "text\tlabel\nw1 good\tpos\n", "no column 'sentence' (the header has text, label)"),
        (["evaluate", "RUN", "--labelled", "DATA"], "sentence\tlabel\nw1 good\tmaybe\n", "unknown label 'maybe' (known: neg, pos)"),
        (["classify", "RUN", "--input", "DATA"], "w1 good\n\nbad\n", "DATA, line 2: empty text"),
        (["evaluate", "RUN", "--src", "DATA", "--ref", "DATA"], "", "a sentence classifier: evaluate it with --labelled FILE"),
        (["translate", "RUN", "--input", "DATA"], "w1\n", "a sase model; this command needs a translation run"),
    ],
)
def test_bad_input_is_one_error_line(keyword_run, tmp_path, capsys, args, data, message):
    path = tmp_path / "data.tsv"
    path.write_text(data)
    capsys.readouterr()
    argv = [str(keyword_run) if a == "RUN" else str(path) if a == "DATA" else a for a in args]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message.replace("DATA", str(path)) in err, err


def test_a_translation_run_given_to_classify_is_refused(tmp_path, capsys):
    run = validate_run({"data": {"corpus": "synthetic", "tokenizer": "word"}, "train": {"max_steps": 1}}, "t")
    vocab = Vocabulary(["t1", "t2"])
    write_run(tmp_path / "mt", run, FAMILIES["translation"].vocabs_to_json(Vocabs(WordTokenizer(), WordTokenizer(), vocab, vocab), tmp_path / "mt"))
    assert main(["classify", str(tmp_path / "mt"), "--input", str(tmp_path / "mt" / "config.yaml")]) == 2
    assert "a transformer model; this command needs a classification run" in capsys.readouterr().err
    assert main(["evaluate", str(tmp_path / "mt"), "--labelled", "x.tsv"]) == 2
    assert "a translation run: evaluate it with --src FILE --ref FILE" in capsys.readouterr().err


def test_resume_equals_uninterrupted(tmp_path):
    from attnkit.families import load_config

    path = config(tmp_path, max_steps=6, eval_every=3)
    train(load_config(path), tmp_path / "full")
    train(load_config(path, ["train.max_steps=3"]), tmp_path / "split")
    state = train(load_config(path), tmp_path / "split", resume=True)
    assert state.step == 6
    a, b = (load_file(str(tmp_path / r / "checkpoints" / "step_00000006" / "model.safetensors")) for r in ("full", "split"))
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


def test_sentence_pairs_train_and_classify(tmp_path, capsys):
    # Pairs through the trainer (labelled file with a second text column, the paper's factor
    # interaction) and `classify` with premise<TAB>hypothesis lines.
    rows = [line.rstrip("\n").split("\t") for line in keyword_rows(40, 4)]
    (tmp_path / "pairs.jsonl").write_text("".join(json.dumps({"p": "w1 w2", "h": text, "y": label}) + "\n" for text, label in rows))
    path = config(tmp_path, max_steps=4, eval_every=2)
    tree = yaml.safe_load(path.read_text())
    tree["data"].update(train=str(tmp_path / "pairs.jsonl"), valid=str(tmp_path / "pairs.jsonl"), text_column="p", text2_column="h", label_column="y")
    tree["model"]["pair"] = "factor"
    path.write_text(yaml.safe_dump(tree))
    assert main(["train", str(path), "--out", str(tmp_path / "run")]) == 0
    (tmp_path / "in.txt").write_text("w1 w2\tw3 good\n")
    capsys.readouterr()
    assert main(["classify", str(tmp_path / "run"), "--input", str(tmp_path / "in.txt"), "--jsonl"]) == 0
    record = json.loads(capsys.readouterr().out)
    assert record["tokens"] == ["w1", "w2"] and len(record["attention"]) == 2
    (tmp_path / "in.txt").write_text("w1 w2 no tab\n")
    assert main(["classify", str(tmp_path / "run"), "--input", str(tmp_path / "in.txt")]) == 2
    assert "line 1: a sentence-pair model needs 'premise<TAB>hypothesis', got 1 field(s)" in capsys.readouterr().err


@pytest.mark.parametrize(
    "edit, message",
    [
        (lambda info: info["labels"]["labels"].append("maybe"), "weights do not match the model built from run.json/config"),
        (lambda info: info.pop("labels"), "run.json: malformed (KeyError: 'labels')"),
        (lambda info: info["vocab"].update(tokens=["x"]), "run.json: malformed (DataError: vocabulary JSON"),
    ],
)
def test_loading_a_damaged_sase_run_is_one_error(keyword_run, tmp_path, capsys, edit, message):
    import shutil

    copy = tmp_path / "copy"
    shutil.copytree(keyword_run, copy)
    info = json.loads((copy / "run.json").read_text())
    edit(info)
    (copy / "run.json").write_text(json.dumps(info))
    (tmp_path / "in.txt").write_text("w1 good\n")
    assert main(["classify", str(copy), "--input", str(tmp_path / "in.txt")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err, err
