"""A sentence classifier in the explorer (`families.classification.explore`): its hops through `attnkit attention`,
`report`, `plot --view` and the `/attention` page of `serve`, and the attributions of its class.

The npz's `hops/layer1` (1, R, n) is A as the model computes it (recomputed here with the model's own forward
pass); the page carries the class and probabilities as its `note`; f is log p(class | x) over the word
embeddings, integrated gradients of it are complete within 1%, and the taus are recomputed from the npz."""

from __future__ import annotations

import base64
import json
import re
from pathlib import Path

import numpy as np
import pytest
import torch

from attnkit.analysis.attribution import integrated_gradients
from attnkit.analysis.correlation import kendall_tau
from attnkit.artifacts.checkpoint import save_checkpoint
from attnkit.artifacts.runs import write_run
from attnkit.cli import main
from attnkit.data.vocab import Vocabulary
from attnkit.families import family_of, load_run, validate_run
from attnkit.families.classification.codec import SentenceVocabs
from attnkit.families.classification.data import LabelMap
from attnkit.families.classification.infer import model_inputs
from attnkit.sources import open_source
from attnkit.sources.page import page_record

TEXT = "T1 t2 t3 t4"
WORDS = ["t1", "t2", "t3", "t4"]
DATA = re.compile(r'<script type="application/json" id="attention-data">(.*?)</script>', re.S)
TINY_SASE = {"kind": "sase", "embed_dim": 16, "u": 16, "d_a": 16, "r": 2, "mlp_hidden": 16, "dropout": 0.0}


def make_run(folder: Path, model: dict, labels: list[str], **data) -> Path:
    """A run folder of an untrained classifier over the words t0..t9 (its training files are never read)."""
    data = {"corpus": "labelled", "train": "train.tsv", "valid": "valid.tsv", **data}
    run = validate_run({"data": data, "model": model, "train": {"max_steps": 1, "early_stopping": "accuracy"}}, "tiny run")
    vocabs = SentenceVocabs(Vocabulary([f"t{i}" for i in range(10)]), LabelMap(labels))
    family = family_of("sase")
    write_run(folder, run, family.vocabs_to_json(vocabs, folder))
    with torch.random.fork_rng():
        torch.manual_seed(1)
        save_checkpoint(folder, 1, family.build(run, vocabs), state={"step": 1})
    return folder


@pytest.fixture(scope="module")
def pair_run(tmp_path_factory) -> Path:
    """A tiny untrained sentence-pair classifier (premise<TAB>hypothesis), three hops, three labels."""
    folder = tmp_path_factory.mktemp("runs") / "tiny-pair"
    return make_run(folder, {**TINY_SASE, "r": 3, "pair": "factor"}, ["entailment", "neutral", "contradiction"], text2_column="hypothesis")


def _own_attention(loaded, text: str):
    """(A of the first sentence (R, n), A of the second or None, the probabilities (C,)) from the model's forward pass."""
    with torch.no_grad():
        out = loaded.model(*model_inputs(loaded, text))
    second = None if out.attention2 is None else out.attention2[0]
    return out.attention[0], second, out.logits[0].softmax(-1)


def test_the_npz_holds_the_models_own_hops(tiny_sase_run, tmp_path, capsys):
    out = tmp_path / "a.npz"
    assert main(["attention", str(tiny_sase_run), TEXT, "--out", str(out)]) == 0
    summary = json.loads(capsys.readouterr().out)
    z = np.load(out)
    loaded = load_run(tiny_sase_run)
    a, _, probs = _own_attention(loaded, TEXT)
    np.testing.assert_array_equal(z["hops/layer1"], a[None].numpy())  # (1, R, n): one layer of one head
    assert z["hops/layer1"].dtype == np.float32
    assert list(z["hops/queries"]) == ["hop 1", "hop 2"] and list(z["hops/keys"]) == WORDS == list(z["tokens"])
    label = ["neg", "pos"][int(probs.argmax())]
    assert z["note"][0] == summary["note"] and summary["note"].startswith(f"{label}, p = {probs.max().item():.3f} (")
    assert summary["kinds"] == {"hops": 1} and summary["prediction"] == label  # the record's text: the class
    assert "target_tokens" not in z.files and "rollout" not in z.files  # the hops are no output, and do not roll out


def test_a_pair_model_gives_the_hops_of_both_sentences(pair_run, tmp_path, capsys):
    out = tmp_path / "pair.npz"
    assert main(["attention", str(pair_run), "t1 t2 t3\tt4 t5", "--out", str(out)]) == 0
    assert json.loads(capsys.readouterr().out)["kinds"] == {"hops": 1, "hops2": 1}
    z = np.load(out)
    a, a2, _ = _own_attention(load_run(pair_run), "t1 t2 t3\tt4 t5")
    np.testing.assert_array_equal(z["hops/layer1"][0], a.numpy())
    np.testing.assert_array_equal(z["hops2/layer1"][0], a2.numpy())
    assert z["hops2/layer1"].shape == (1, 3, 2) and list(z["hops2/keys"]) == ["t4", "t5"] and list(z["tokens"]) == ["t1", "t2", "t3"]


def test_the_report_and_the_attention_page_show_the_hops(tiny_sase_run, tmp_path):
    from fastapi.testclient import TestClient

    from attnkit.serve.app import create_app

    page = tmp_path / "report.html"
    assert main(["report", str(tiny_sase_run), TEXT, "--out", str(page)]) == 0
    html = page.read_text(encoding="utf-8")
    (record,) = json.loads(DATA.findall(html)[0])
    hops = record["maps"]["hops"]
    assert hops["rows"] == ["hop 1", "hop 2"] and hops["cols"] == WORDS
    loaded = load_run(tiny_sase_run)
    a, _, _ = _own_attention(loaded, TEXT)
    byte = np.frombuffer(base64.b64decode(hops["data"][0][0]), np.uint8).reshape(a.shape) / 255 * hops["scale"][0][0]
    assert np.allclose(byte, a.numpy(), atol=hops["scale"][0][0] / 510 + 1e-6)  # the maps are the model's hops (a page holds bytes)
    assert record["source"] == TEXT and record["text"] in {"neg", "pos"} and hops["title"] == "attention hops"
    assert "AttnView.extend = " in html  # the family's renderer extends the common card
    with TestClient(create_app({"sase": loaded})) as client:
        response = client.post("/v1/attention", json={"model": "sase", "text": TEXT})
        assert response.status_code == 200, response.text
        served = response.json()["record"]
    assert served["note"] == page_record(open_source(tiny_sase_run), TEXT)["note"] and served["note"].startswith(record["text"])
    assert set(served["maps"]) == {"hops"} and served["maps"]["hops"]["cols"] == WORDS and served["text"] == record["text"]


@pytest.mark.parametrize("view", ["hops", "heatmap", "head", "model"])
@pytest.mark.parametrize("suffix", [".png", ".svg"])
def test_plot_views_of_the_hops(tiny_sase_run, tmp_path, capsys, view, suffix):
    out = tmp_path / f"{view}{suffix}"
    assert main(["plot", str(tiny_sase_run), TEXT, "--view", view, "--out", str(out)]) == 0
    data = out.read_bytes()
    assert data.startswith(b"\x89PNG") if suffix == ".png" else b"<svg" in data[:2000]


def test_plot_writes_a_heatmap_per_hop_map(tiny_sase_run, tmp_path):
    assert main(["plot", str(tiny_sase_run), TEXT, "--out", str(tmp_path / "plots")]) == 0
    assert [p.name for p in (tmp_path / "plots").iterdir()] == ["000-hops-layer1-head1.png"]


@pytest.mark.parametrize("fixture", ["tiny_sase_run", "pair_run"])
def test_f_is_the_log_probability_of_the_class_and_ig_is_complete(request, fixture):
    pytest.importorskip("captum")
    loaded = load_run(request.getfixturevalue(fixture))
    text = TEXT if fixture == "tiny_sase_run" else "t1 t2 t3\tt4 t5"
    _, _, probs = _own_attention(loaded, text)
    for c in range(len(probs)):
        f, x, label = loaded.family.attribution(loaded, text, c)
        assert label == f"class {c} ({loaded.vocabs.labels.labels[c]})" and x.shape == (len(text.split("\t")[0].split()), 16)
        with torch.no_grad():
            fx = f(x.expand(2, -1, -1))
        torch.testing.assert_close(fx, probs[c].log().expand(2), atol=1e-5, rtol=1e-5)
        a = integrated_gradients(f, x)
        assert a.relative_error <= 0.01
        with torch.no_grad():
            assert a.scores.sum().item() == pytest.approx(fx[0].item() - f(torch.zeros_like(x)[None]).item(), rel=0.011, abs=1e-6)
    _, _, label = loaded.family.attribution(loaded, text, None)
    assert label.endswith(f"({loaded.vocabs.labels.labels[int(probs.argmax())]})")  # default: the class the model chose


def test_the_npz_and_the_page_carry_attributions_and_their_taus(tiny_sase_run, tmp_path, capsys):
    pytest.importorskip("captum")
    out = tmp_path / "attr.npz"
    assert main(["attention", str(tiny_sase_run), TEXT, "--out", str(out), "--attribute", "ixg", "ig", "--attribute-target", "1"]) == 0
    assert json.loads(capsys.readouterr().out)["attributed"] == "class 1 (pos)"
    z = np.load(out)
    assert z["attr/output"][0] == "class 1 (pos)" and z["attr/ig"].shape == z["attr/ixg"].shape == (4,)
    assert z["attr/ig_relative_error"] <= 0.01 and "attr/row" not in z.files  # one output for every hop: no row
    assert list(z["tau/names"]) == ["hops/layer1"]
    np.testing.assert_allclose(z["tau/rows"][0], z["hops/layer1"][0].mean(0), rtol=1e-6)  # the hops' mean
    for method in ("ixg", "ig"):
        assert z[f"tau/{method}"][0] == pytest.approx(kendall_tau(torch.from_numpy(z["tau/rows"][0]), torch.from_numpy(z[f"attr/{method}"]).abs()))
    page = tmp_path / "attr.html"
    assert main(["report", str(tiny_sase_run), TEXT, "--attribute", "ig", "--attribute-target", "1", "--out", str(page)]) == 0
    (record,) = json.loads(DATA.findall(page.read_text(encoding="utf-8"))[0])
    a = record["attribution"]
    assert a["output"] == "class 1 (pos)" and a["row"] is None and a["tokens"] == WORDS
    assert a["compared"]["names"] == ["hops/layer1"] and a["tau"]["ig"][0] == pytest.approx(float(z["tau/ig"][0]))
    np.testing.assert_allclose(a["scores"]["ig"], z["attr/ig"], rtol=1e-4, atol=1e-6)


def test_bad_input_is_one_line(tiny_sase_run, tmp_path, capsys):
    def error(*argv: str) -> str:
        assert main(list(argv)) == 2
        lines = capsys.readouterr().err.strip().splitlines()
        assert len(lines) == 1, lines
        return lines[0]

    out = str(tmp_path / "a.npz")
    assert "--attribute-target 2: the model has 2 classes (0-1: neg, pos)" in error(
        "attention", str(tiny_sase_run), TEXT, "--out", out, "--attribute", "ig", "--attribute-target", "2"
    )
    mean = make_run(tmp_path / "tiny-mean", {**TINY_SASE, "pooling": "mean"}, ["neg", "pos"])  # no attention pooling
    assert "tiny-mean: the model has no attention maps" in error("attention", str(mean), TEXT, "--out", out)
    assert not Path(out).exists()
