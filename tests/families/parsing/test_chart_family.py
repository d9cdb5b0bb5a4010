"""The chart parser end to end through the CLI: `attnkit train` learns a few trees by heart, then
`parse`, `evaluate --trees`, the report's records and the serve page, as for the seq2seq parser."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from attnkit.cli import main
from attnkit.families import load_config, load_run, presets
from attnkit.families.parsing.trees import parse_trees
from attnkit.sources import AttentionOptions
from attnkit.sources.record import explain_inputs
from attnkit.sources.source import RunSource
from attnkit.viz.records import records_json

TREES = """( (S (NP-SBJ (DT The) (NN dog)) (VP (VBZ barks)) (. .)) )
( (S (NP-SBJ (PRP It)) (VP (VBD saw) (NP (DT a) (NN cat))) (. .)) )
( (S (NP-SBJ (DT The) (NN cat)) (VP (VBD saw) (NP (DT a) (NN dog)) (PP (IN in) (NP (DT the) (NN park)))) (. .)) )
( (FRAG (INTJ (UH No)) (. .)) )
( (S (NP-SBJ (PRP It)) (VP (VBZ seems) (S (VP (TO to) (VP (VB work))))) (. .)) )
( (NP (NN Yes)) )
"""


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory) -> Path:
    """A tiny chart parser trained by `attnkit train` on six trees (the dev trees are the same six)."""
    tmp = tmp_path_factory.mktemp("chart")
    (tmp / "tb").mkdir()
    (tmp / "tb" / "wsj_0001.mrg").write_text(TREES, encoding="utf-8")
    (tmp / "tb" / "wsj_0180.mrg").write_text(TREES, encoding="utf-8")
    config = tmp / "chart.yaml"
    config.write_text(f"""task: parsing
data: {{treebank: {tmp / "tb"}, min_freq: 1}}
model: {{kind: chart, layers: 1, d_model: 32, n_heads: 2, d_kv: 16, d_ff: 64, d_char: 8, d_label_hidden: 32,
        dropout: 0.0, attention_dropout: 0.0, relu_dropout: 0.0, embedding_dropout: 0.0, max_positions: 40}}
train: {{max_steps: 120, eval_every: 60, threads: 1, precision: fp32, schedule: {{kind: constant, lr: 0.005}}, betas: [0.9, 0.98]}}
""")
    out = tmp / "runs" / "chart"
    assert main(["train", str(config), "--out", str(out)]) == 0
    return out


def test_the_preset_validates():
    run = load_config(presets()["parse-ptb-chart"])
    assert run.task == "parsing" and run.model.kind == "chart" and run.train.early_stopping == "f1"
    assert run.model.d_model == 256 and run.train.precision == "fp32"


def test_training_learns_the_trees_and_evaluate_scores_them(run_dir, capsys):
    lines = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    valid = [line for line in lines if line["kind"] == "valid"]
    assert valid[-1]["f1"] == 100.0 and valid[-1]["exact"] == 1.0 and valid[-1]["tag_acc"] == 100.0
    gold = run_dir.parent.parent / "tb"
    assert main(["evaluate", str(run_dir), "--trees", str(gold), "--split", "dev"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["all"]["fmeasure"] == 100.0 and report["sentences"] == 6 and report["decode"] == "CKY (exact)"


def test_parse_prints_the_learned_trees(run_dir, tmp_path, capsys):
    gold = [parse_trees(line)[0] for line in TREES.splitlines()]
    (tmp_path / "in.txt").write_text("".join(" ".join(t.words()) + "\n" for t in gold))
    assert main(["parse", str(run_dir), "--input", str(tmp_path / "in.txt")]) == 0
    trees = [parse_trees(line)[0] for line in capsys.readouterr().out.splitlines()]
    expected = ["(S (NP (DT The) (NN dog)) (VP (VBZ barks)) (. .))", "(FRAG (INTJ (UH No)) (. .))", "(NP (NN Yes))",
                "(S (NP (PRP It)) (VP (VBZ seems) (S (VP (TO to) (VP (VB work))))) (. .))"]  # fmt: skip
    assert {str(t) for t in trees} >= set(expected)  # unary chains (S+VP, NP over one word) come back


def test_records_and_the_serve_page_show_the_span_chart_and_attention(run_dir):
    from fastapi.testclient import TestClient

    from attnkit.serve.app import create_app

    loaded = load_run(run_dir)
    (record,) = records_json(explain_inputs(RunSource(loaded), ["The dog barks ."], AttentionOptions(nbest=1)))
    assert str(parse_trees(record["tree"])[0]) == "(S (NP (DT The) (NN dog)) (VP (VBZ barks)) (. .))"
    chart = record["chart"]
    assert chart["words"] == ["The", "dog", "barks", "."] and [0, 3] in chart["in_tree"] and [0, 1] in chart["in_tree"]
    assert chart["best"][0][1] > 0 and chart["labels"][0][1] == "NP"  # "The dog": rather an NP than no constituent
    assert chart["labels"][0][3] == "S" and chart["best"][3][0] is None  # the root (labelled whatever its score); j < i: none
    assert set(record["maps"]) == {"encoder", "rollout"} and len(record["maps"]["encoder"]["rows"]) == 6  # <s> 4 words </s>
    with TestClient(create_app({"chart": loaded})) as client:
        response = client.post("/v1/parse", json={"texts": ["It saw a dog ."], "attention": True})
        assert response.status_code == 200, response.text
        (result,) = response.json()["results"]
        assert result["chart"]["words"] == ["It", "saw", "a", "dog", "."] and set(result["maps"]) == {"encoder"}
        plain = client.post("/v1/parse", json={"texts": ["It barks ."]}).json()["results"][0]
        assert plain["chart"] is None and plain["maps"] is None
        assert "renderChart" in client.get("/static/parse-view.js").text
        (model,) = client.get("/v1/models").json()
        assert model["task"] == "parsing" and model["kind"] == "chart" and "beam" not in model  # a chart parser has no beam


def test_report_and_plot_of_a_chart_run(run_dir, tmp_path):
    page = tmp_path / "report.html"
    assert main(["report", str(run_dir), "The dog barks .", "--out", str(page)]) == 0
    html = page.read_text(encoding="utf-8")
    assert "renderChart" in html and '"in_tree"' in html
    assert main(["plot", str(run_dir), "The dog barks .", "--out", str(tmp_path / "plots")]) == 0
    assert sorted(p.name for p in (tmp_path / "plots").glob("*layer1-mean.png")) == ["000-encoder-layer1-mean.png"]


def test_attention_writes_the_chart_parsers_own_maps(run_dir, tmp_path, capsys):
    """`attnkit attention` on a chart run: the encoder's self-attention per layer over <s> words </s>, as the
    model's scoring pass computes it (`chart.codec.scores_of`), and its rollout."""
    import numpy as np
    import torch

    from attnkit.families.parsing.chart.codec import collate, encode_words, scores_of

    out = tmp_path / "chart.npz"
    assert main(["attention", str(run_dir), "The dog barks .", "--out", str(out)]) == 0
    assert json.loads(capsys.readouterr().out)["kinds"] == {"encoder": 1}
    z = np.load(out)
    tokens = ["<s>", "The", "dog", "barks", ".", "</s>"]
    assert list(z["tokens"]) == list(z["encoder/queries"]) == list(z["encoder/keys"]) == tokens and "target_tokens" not in z.files
    loaded = load_run(run_dir)
    batch = collate([encode_words(loaded.vocabs, ["The", "dog", "barks", "."])], [0])
    with torch.inference_mode():
        *_, maps = scores_of(loaded.model, batch)  # per layer (1, H, n + 2, n + 2)
    assert z["encoder/layer1"].shape == (2, 6, 6)
    np.testing.assert_array_equal(z["encoder/layer1"], maps[0][0].float().numpy())
    assert z["rollout"].shape == (6, 6)
