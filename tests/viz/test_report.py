"""`attnkit report`: one self-contained HTML file that embeds the attention records as JSON."""

from __future__ import annotations

import base64
import io
import json
import re
import shutil
import sys

import numpy as np
import pytest

from attnkit.cli import main
from attnkit.families import run_family
from attnkit.viz.curves import run_curves
from attnkit.viz.export import read_attention_jsonl


def weights(entry: dict, layer: int, head: int) -> np.ndarray:
    """One map of a page's `maps` entry held as bytes (`viz.weights`): (Tq, Tk) float."""
    data = np.frombuffer(base64.b64decode(entry["data"][layer][head]), np.uint8).astype(np.float64)
    return (data / 255 * entry["scale"][layer][head]).reshape(len(entry["rows"]), len(entry["cols"]))


DATA = re.compile(r'<script type="application/json" id="attention-data">(.*?)</script>', re.S)


def test_report_is_self_contained_and_embeds_the_exported_records(tiny_transformer_run, tmp_path):
    src = tmp_path / "src.txt"
    src.write_text("t1 t2 t3\nt4 </script> t5\n")  # markup in the input must not end the data block
    out = tmp_path / "report.html"
    assert main(["report", str(tiny_transformer_run), "--input", str(src), "--out", str(out), "--beam", "2"]) == 0
    html = out.read_text(encoding="utf-8")
    assert not re.search(r"https?://(?!www\.w3\.org/2000/svg\b)", html)  # no network: no external scripts, styles or fonts (the SVG namespace is a name)
    assert not re.search(r"<(script|link|img)[^>]+(src|href)=\"(?!data:)", html)  # everything inline
    assert "const AttnView" in html and "const AttnDraw" in html and ".attn-stage" in html
    (data,) = DATA.findall(html)
    records = json.loads(data)
    assert [r["source"] for r in records] == ["t1 t2 t3", "t4 </script> t5"]
    # The records `attnkit translate --attention` writes, with text, n-best and maps added; the cross attention once, in `maps`.
    assert main(["translate", str(tiny_transformer_run), "--input", str(src), "--beam", "2", "--attention", str(tmp_path / "a.jsonl")]) == 0
    for exported, embedded in zip(read_attention_jsonl(tmp_path / "a.jsonl"), records):
        assert {k: embedded[k] for k in exported if k != "attention"} == {k: v for k, v in exported.items() if k != "attention"}
        assert "attention" not in embedded and embedded["schema"] == 2
        assert len(embedded["nbest"]) == 2 and embedded["text"] == embedded["nbest"][0]["text"]
        assert set(embedded["maps"]) == {"encoder", "decoder_self", "cross", "rollout", "rollout_encoder"}
        cross = embedded["maps"]["cross"]
        assert len(cross["data"]) == 2 and len(cross["data"][0]) == 2 and len(cross["rows"]) == len(embedded["tgt"])  # (L, H) maps as bytes
        last = weights(cross, 1, 0)  # (T, S): layer 2, head 1
        assert last.shape == (len(embedded["tgt"]), len(embedded["src"])) and np.allclose(last.sum(-1), 1.0, atol=len(embedded["src"]) / 255)


def test_report_of_a_sentence_classifier_embeds_labels_and_hops(tiny_sase_run, tmp_path):
    out = tmp_path / "report.html"
    assert main(["report", str(tiny_sase_run), "T1 t2 t3", "--out", str(out)]) == 0
    (record,) = json.loads(DATA.findall(out.read_text(encoding="utf-8"))[0])
    # The common record: the input as `source`, the class as `text`, the hops as a kind of `maps` (one layer of one head).
    assert record["source"] == "T1 t2 t3" and record["text"] in {"neg", "pos"} and record["note"].startswith(record["text"] + ", p = ")
    assert sum(record["probs"].values()) == pytest.approx(1.0)
    hops = record["maps"]["hops"]
    assert hops["cols"] == ["t1", "t2", "t3"] and hops["rows"] == ["hop 1", "hop 2"] and (hops["title"], hops["role"]) == ("attention hops", "readout")
    assert len(hops["data"]) == 1 and len(hops["data"][0]) == 1  # (L, H) = (1, 1) maps of (R, n)
    a = weights(hops, 0, 0)
    assert a.shape == (2, 3) and np.allclose(a.sum(-1), 1.0, atol=3 / 255)  # r = 2 hops, each a distribution (bytes: within 1/255 a weight)


CURVES = re.compile(r'<script type="application/json" id="curves-data">(.*?)</script>', re.S)


def test_report_of_a_trained_run_embeds_and_draws_its_training_curves(tiny_trained_run, tmp_path):
    out = tmp_path / "report.html"
    assert main(["report", str(tiny_trained_run), "t1 t2 t3", "--out", str(out), "--beam", "1"]) == 0
    html = out.read_text(encoding="utf-8")
    (data,) = CURVES.findall(html)
    expected = run_curves(tiny_trained_run, run_family(tiny_trained_run).run_schema.METRICS).to_json()
    assert json.loads(data) == [expected] and [p["key"] for p in expected["panels"]] == ["loss", "lr", "bleu"]
    assert "const AttnCurves" in html and 'AttnCurves.draw(document.getElementById("curves"), curves)' in html


def test_report_of_a_run_without_metrics_has_no_curves(tiny_transformer_run, tmp_path):
    out = tmp_path / "report.html"
    assert main(["report", str(tiny_transformer_run), "t1 t2", "--out", str(out), "--beam", "1"]) == 0
    assert CURVES.findall(out.read_text(encoding="utf-8")) == ["[]"]


def test_placeholders_in_the_input_stay_as_they_are(tiny_transformer_run, tmp_path):
    out = tmp_path / "report.html"
    assert main(["report", str(tiny_transformer_run), "t1 {{curves}} {{title}}", "--out", str(out), "--beam", "1"]) == 0
    (data,) = DATA.findall(out.read_text(encoding="utf-8"))
    assert json.loads(data)[0]["source"] == "t1 {{curves}} {{title}}"


def test_report_of_a_run_with_a_corrupt_metrics_line_is_one_line(tiny_trained_run, tmp_path, capsys):
    run = shutil.copytree(tiny_trained_run, tmp_path / "toy")
    with (run / "metrics.jsonl").open("a", encoding="utf-8") as f:
        f.write("{oops\n")
    assert main(["report", str(run), "t1 t2", "--out", str(tmp_path / "r.html"), "--beam", "1"]) == 2
    assert (
        capsys.readouterr().err.strip()
        == f"attnkit: error: {run / 'metrics.jsonl'}, line 9: not JSON (Expecting property name enclosed in double quotes at column 2)"
    )
    assert not (tmp_path / "r.html").exists()


@pytest.mark.parametrize("argv", [["--long"], []], ids=["long without --document", "empty stdin"])
def test_a_report_without_input_is_one_line(argv, tiny_transformer_run, tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"\n")))
    assert main(["report", str(tiny_transformer_run), *argv, "--out", str(tmp_path / "x.html")]) == 2
    expected = (
        "report --long: give the document as --document FILE" if argv else "<stdin>: no input: give a sentence, --input FILE (one a line) or lines on stdin"
    )
    assert capsys.readouterr().err.strip().splitlines() == [f"attnkit: error: {expected}"]
    assert not (tmp_path / "x.html").exists()
