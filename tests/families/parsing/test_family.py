"""The parsing family end to end on a hand-made run folder: config, prepared data, the CLI verbs
(`parse`, `evaluate --trees`, `evalb`), records for the report, and bad input as one error line."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from attnkit.artifacts.checkpoint import save_checkpoint
from attnkit.artifacts.runs import write_run
from attnkit.cli import main
from attnkit.errors import ConfigError
from attnkit.families import FAMILIES, load_config, load_run, presets
from attnkit.families.parsing.draw import tree_svg
from attnkit.families.parsing.trees import parse_trees
from attnkit.sources import AttentionOptions
from attnkit.sources.record import explain_inputs
from attnkit.sources.source import RunSource
from attnkit.viz.records import records_json

TRAIN = """( (S (NP-SBJ-1 (DT The) (NN dog)) (VP (VBZ barks) (NP (-NONE- *-1))) (. .)) )
( (S (NP-SBJ (PRP It)) (VP (VBD saw) (NP (DT a) (NN cat))) (. .)) )
"""
DEV = "( (S (NP (DT The) (NN cat)) (VP (VBD saw) (NP (DT a) (NN dog))) (. .)) )\n"


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory) -> Path:
    """A parsing run: two training trees, one dev tree, an untrained 1-layer model (one checkpoint),
    with the preset's word pointer, tagger and unknown-word signatures."""
    tmp = tmp_path_factory.mktemp("parse")
    (tmp / "tb").mkdir()
    (tmp / "tb" / "wsj_0001.mrg").write_text(TRAIN, encoding="utf-8")
    (tmp / "tb" / "wsj_0180.mrg").write_text(DEV, encoding="utf-8")
    config = tmp / "parse.yaml"
    config.write_text(f"""task: parsing
data: {{treebank: {tmp / "tb"}, min_freq: 2, unknown: signature}}
model: {{layers: 1, d_model: 16, n_heads: 2, d_ff: 32, pointer: true, tagger: true}}
train: {{max_steps: 1}}
decode: {{beam: 2, max_len_b: 20, max_src_len: 12}}
""")
    run = load_config(config)
    family = FAMILIES["parsing"]
    out = tmp / "runs" / "run"
    task = family.task(run, out, None)
    assert len(task.data.train) == 2 and len(task.data.valid) == 1
    write_run(out, run, family.vocabs_to_json(task.vocabs, out))
    save_checkpoint(out, 1, task.build_model(), state={"step": 1})
    return out


def test_presets_validate_and_a_parsing_config_needs_its_task(tmp_path):
    for preset in ("parse-ptb", "parse-wsj"):
        run = load_config(presets()[preset])
        assert run.task == "parsing" and run.train.early_stopping == "f1"
        assert (run.decode.beam, run.decode.alpha, run.decode.max_len_a, run.decode.max_len_b) == (21, 0.3, 1.0, 300)
    config = tmp_path / "bad.yaml"
    config.write_text("task: parsing\ndata: {leaves: both}\ntrain: {max_steps: 1}\n")
    with pytest.raises(ConfigError, match="leaves"):
        load_config(config)


def test_parse_prints_one_tree_over_the_words_per_line(run_dir, tmp_path, capsys):
    sentences = tmp_path / "in.txt"
    sentences.write_text("The dog saw a cat .\nIt barks .\n")
    assert main(["parse", str(run_dir), "--input", str(sentences), "--checkpoint", "last"]) == 0
    trees = [parse_trees(line)[0] for line in capsys.readouterr().out.splitlines()]
    assert [t.words() for t in trees] == [["The", "dog", "saw", "a", "cat", "."], ["It", "barks", "."]]
    assert trees[0].tags()[-1] == "."  # punctuation keeps its PTB tag, so EVALB can drop it
    sentences.write_text('It said "no."\n')
    assert main(["parse", str(run_dir), "--input", str(sentences), "--raw", "--beam", "1", "--checkpoint", "last"]) == 0
    assert parse_trees(capsys.readouterr().out)[0].words() == ["It", "said", "``", "no", ".", "''"]


def test_evaluate_scores_with_evalb_and_counts_repairs(run_dir, capsys):
    gold = run_dir.parent.parent / "tb" / "wsj_0180.mrg"
    assert main(["evaluate", str(run_dir), "--trees", str(gold), "--checkpoint", "last", "--beam", "1"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["all"]["valid_sentences"] == 1 and report["all"]["error_sentences"] == 0
    assert report["repaired"] == 0 and report["decode"]["beam"] == 1 and report["all"]["gold_brackets"] == 4  # S NP VP NP
    assert report["all"]["tagging_accuracy"] == 100.0  # the parses carry the gold tags ...
    assert 0 <= report["tagger_accuracy"] <= 100 and "tagger_accuracy" in report["tags"]  # ... and the tagger is scored on its own


def test_evaluate_scores_one_part_of_a_treebank(run_dir, capsys):
    treebank = run_dir.parent.parent / "tb"
    assert main(["evaluate", str(run_dir), "--trees", str(treebank), "--split", "dev", "--checkpoint", "last", "--beam", "1"]) == 0
    assert json.loads(capsys.readouterr().out)["sentences"] == 1
    assert main(["evaluate", str(run_dir), "--trees", str(treebank), "--split", "test", "--checkpoint", "last"]) == 2
    assert "no test trees in it" in capsys.readouterr().err


def test_evalb_command_reproduces_the_sample_summary(evalb_dir, capsys):
    args = ["evalb", str(evalb_dir / "sample.gld"), str(evalb_dir / "sample.tst"), "--params", str(evalb_dir / "sample.prm")]
    assert main(args) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["all"]["valid_sentences"] == 17 and round(summary["all"]["recall"], 2) == 87.76
    assert round(summary["all"]["precision"], 2) == 90.53 and round(summary["len<=40"]["tagging_accuracy"], 2) == 96.88
    assert main([*args, "--table"]) == 0
    assert capsys.readouterr().out == (evalb_dir / "sample.rsl").read_text()


def test_records_carry_the_tree_its_picture_and_the_attention(run_dir):
    loaded = load_run(run_dir, "last")
    (record,) = records_json(explain_inputs(RunSource(loaded), ["The dog barks ."], AttentionOptions(nbest=1)))
    assert parse_trees(record["tree"])[0].words() == ["The", "dog", "barks", "."]
    assert record["svg"].startswith("<svg") and ">barks</text>" in record["svg"]
    assert len(record["maps"]["cross"]["rows"]) == len(record["tgt"]) and len(record["maps"]["cross"]["cols"]) == 5  # 4 words + </s>
    assert "attention" not in record and set(record["maps"]) == {"encoder", "decoder_self", "cross", "rollout", "rollout_encoder"}


def test_tree_svg_escapes_words():
    assert "&lt;b&gt;" in tree_svg(parse_trees("(S (NN <b>))")[0])


@pytest.mark.parametrize(
    ("trees", "lines", "message"),
    [
        ("( (S (NN a) )\n", None, r"gold\.mrg, tree 1 \(line 1\): unbalanced brackets"),
        ("(S (NN a))\n()\n", None, r"gold\.mrg, tree 2 \(line 2\): .*empty"),
        ("(S (NN a))\n( (S (-NONE- *)) )\n", None, r"gold\.mrg, tree 2: no words left"),
        (None, "a b\n\nc\n", r"in\.txt, line 2: no words to parse"),
        (None, " ".join(["w"] * 13) + "\n", r"in\.txt, line 1: 13 words, more than the model's limit of 12"),
    ],
)
def test_bad_input_is_one_error_line(run_dir, tmp_path, capsys, trees, lines, message):
    if trees is not None:
        (tmp_path / "gold.mrg").write_text(trees)
        args = ["evaluate", str(run_dir), "--trees", str(tmp_path / "gold.mrg"), "--checkpoint", "last"]
    else:
        (tmp_path / "in.txt").write_text(lines)
        args = ["parse", str(run_dir), "--input", str(tmp_path / "in.txt"), "--checkpoint", "last"]
    assert main(args) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    (line,) = captured.err.strip().splitlines()
    assert line.startswith("attnkit: error: ")
    assert re.search(message, line), line


def test_serve_parses_and_shows_the_parse_page(run_dir):
    from fastapi.testclient import TestClient

    from attnkit.serve.app import create_app

    with TestClient(create_app({"parser": load_run(run_dir, "last")})) as client:
        response = client.post("/v1/parse", json={"texts": ['It said "no."'], "raw": True, "beam": 1, "attention": True})
        assert response.status_code == 200, response.text
        (result,) = response.json()["results"]
        assert parse_trees(result["tree"])[0].words() == ["It", "said", "``", "no", ".", "''"]
        assert result["svg"].startswith("<svg") and set(result["maps"]) == {"encoder", "decoder_self", "cross"}
        plain = client.post("/v1/parse", json={"texts": ["It barks ."]}).json()["results"][0]
        assert plain["attention"] is None and plain["maps"] is None
        page = client.get("/parse")
        assert page.status_code == 200 and "/static/parse.js" in page.text and "/static/parse-view.js" in page.text
        assert "AttnView.render)" in client.get("/static/parse.js").text  # the common card, extended by parse-view.js
        models = client.get("/v1/models").json()
        assert models[0]["task"] == "parsing" and models[0]["beam"] == 2


def test_attention_writes_the_parsers_own_maps(run_dir, tmp_path, capsys):
    """`attnkit attention` on a parsing run: every kind and layer (H, Tq, Tk), the words and the output symbols as
    labels, and the last cross-attention layer's head mean is the attention the search recorded step by step."""
    import numpy as np
    import torch

    from attnkit.families.parsing.infer import parse_words

    out = tmp_path / "parse.npz"
    assert main(["attention", str(run_dir), "The dog saw a cat .", "--out", str(out), "--checkpoint", "last"]) == 0
    summary = json.loads(capsys.readouterr().out)
    z = np.load(out)
    loaded = load_run(run_dir, "last")
    (result,) = parse_words(
        loaded.model, loaded.vocabs, [["The", "dog", "saw", "a", "cat", "."]], loaded.run.decode.with_overrides(nbest=1), return_attention=True
    )
    src, tgt = [*result.words, "</s>"], [*result.symbols, "</s>"]
    S, T = len(src), len(tgt)
    assert summary["kinds"] == {"encoder": 1, "decoder_self": 1, "cross": 1} and list(z["tokens"]) == src and list(z["target_tokens"]) == tgt
    for kind, (rows, cols) in {"encoder": (src, src), "decoder_self": (tgt, ["<s>", *result.symbols]), "cross": (tgt, src)}.items():
        assert (list(z[f"{kind}/queries"]), list(z[f"{kind}/keys"])) == (rows, cols)
        assert z[f"{kind}/layer1"].shape == (2, len(rows), len(cols)) and z[f"{kind}/layer1"].dtype == np.float32
        np.testing.assert_allclose(z[f"{kind}/layer1"].sum(-1), 1.0, atol=1e-5)
    assert result.finished and result.attention.shape == (T, S)
    torch.testing.assert_close(torch.from_numpy(z["cross/layer1"]).mean(0), result.attention.float(), atol=1e-5, rtol=0)
    assert z["rollout"].shape == (T, S) and z["rollout_encoder"].shape == (S, S)


def test_heads_importance_of_a_parser_over_trees_and_sentences(run_dir, tmp_path, capsys):
    """`attnkit heads --importance --prune` on the parser (a Transformer family): a gold tree a line, or a sentence
    (scored against the parser's own output); the masks go through the parser's word pointer too."""
    data = tmp_path / "pairs.txt"
    data.write_text(DEV + "It barks .\n", encoding="utf-8")
    out = tmp_path / "heads"
    assert main(["heads", str(run_dir), "--input", str(data), "--out", str(out), "--prune", "2", "--checkpoint", "last"]) == 0
    doc = json.loads((out / "importance.json").read_text(encoding="utf-8"))
    assert doc["pairs"] == 2 and doc["heads"] == 3 * 2 and sorted(doc["importance"]) == ["cross", "decoder_self", "encoder"]
    assert [s["masked"] for s in doc["pruning"]] == [0, 2, 4, 6] and all(s["loss"] > 0 for s in doc["pruning"])
    data.write_text("(S (NP (DT a)) (VP (VBZ b))) (S (NP (DT c)))\n", encoding="utf-8")
    assert main(["heads", str(run_dir), "--input", str(data), "--out", str(out), "--importance", "--checkpoint", "last"]) == 2
    assert "line 1: 2 trees; give one tree or one sentence a line" in capsys.readouterr().err
