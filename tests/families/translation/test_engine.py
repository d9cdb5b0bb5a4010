"""`--engine ctranslate2` (docs/deployment.md): the export is cached beside the run and rebuilt when the
checkpoint changes; CTranslate2 decodes as attnkit does; the engine path's attention (one teacher-forced
pass of attnkit's model) equals the attention of attnkit's own greedy search; bad settings are one line."""

from __future__ import annotations

import importlib.util
import json
import random
import shutil
import sys
from pathlib import Path

import pytest
import torch

from attnkit.artifacts.checkpoint import save_checkpoint
from attnkit.artifacts.runs import load_run
from attnkit.cli import main
from attnkit.errors import AttnkitError
from attnkit.families import FAMILIES
from attnkit.families.protocol import load_engine_run
from attnkit.families.translation import engine
from attnkit.families.translation.api import result as served
from attnkit.families.translation.explore import explore
from attnkit.families.translation.export import ctranslate2_model
from attnkit.families.translation.translate import translate, translate_run

# find_spec, not importorskip: importing ctranslate2 at collection would fix its GEMM backend before attnkit
# chooses it (CTranslate2 reads CT2_USE_MKL as it loads; tests/conftest.py chooses first).
pytestmark = pytest.mark.skipif(importlib.util.find_spec("ctranslate2") is None, reason="the optional ctranslate2 package (pip install 'attnkit[export]')")
FAMILY = FAMILIES["translation"]


@pytest.fixture(scope="module")
def trained(tmp_path_factory, tiny_transformer_maker, train_to_reverse) -> Path:
    return train_to_reverse(tiny_transformer_maker(tmp_path_factory.mktemp("engine") / "run"))


@pytest.fixture
def fresh(trained, tmp_path) -> Path:
    """A copy of the trained run without an export."""
    return Path(shutil.copytree(trained, tmp_path / "run", ignore=shutil.ignore_patterns("engines")))


@pytest.fixture(scope="module")
def engine_run(trained):
    return load_engine_run(trained, FAMILY, "best", "fp32", "ctranslate2")


def _lines(n: int = 60) -> list[str]:
    rng = random.Random(1)
    return [" ".join(f"t{rng.randrange(10)}" for _ in range(rng.randint(1, 7))) for _ in range(n)]


def _counting_writes(monkeypatch) -> list[int]:
    calls: list[int] = []
    real = ctranslate2_model.write

    def write(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(ctranslate2_model, "write", write)
    return calls


def test_the_export_is_cached_and_rebuilt_when_the_checkpoint_changes(fresh, monkeypatch):
    writes = _counting_writes(monkeypatch)
    first = load_engine_run(fresh, FAMILY, "best", "fp32", "ctranslate2")
    folder = engine.export_folder(first)
    assert folder == fresh / "engines" / f"ctranslate2-{first.checkpoint.name}" and len(writes) == 1
    key = (folder / engine.KEY_FILE).read_text()
    model_bin = (folder / "model.bin").stat()
    again = load_engine_run(fresh, FAMILY, "best", "fp32", "ctranslate2")
    assert len(writes) == 1 and (folder / "model.bin").stat().st_ino == model_bin.st_ino  # reused, not rewritten
    assert translate_run(again, _lines(5), again.run.decode)[0][0].text == translate_run(first, _lines(5), first.run.decode)[0][0].text

    model = load_run(fresh, FAMILY).model
    with torch.no_grad():
        model.decoder_layers[0].ffn.w_1.bias.add_(0.5)  # another model under the same checkpoint name
    save_checkpoint(fresh, 1, model, state={"step": 1})
    rebuilt = load_engine_run(fresh, FAMILY, "best", "fp32", "ctranslate2")
    assert len(writes) == 2 and (folder / engine.KEY_FILE).read_text() != key
    assert [p.name for p in (fresh / "engines").iterdir()] == [folder.name]  # no temporary folder left
    ours = translate(rebuilt.model, rebuilt.vocabs, _lines(), rebuilt.run.decode.with_overrides(beam=1))
    assert [t[0].text for t in translate_run(rebuilt, _lines(), rebuilt.run.decode.with_overrides(beam=1))] == [t[0].text for t in ours]


def test_a_changed_config_rebuilds_it_too(fresh, monkeypatch):
    writes = _counting_writes(monkeypatch)
    load_engine_run(fresh, FAMILY, "best", "fp32", "ctranslate2")
    config = fresh / "config.yaml"
    config.write_text(config.read_text().replace("max_len_b: 3", "max_len_b: 4"))
    load_engine_run(fresh, FAMILY, "best", "fp32", "ctranslate2")
    assert len(writes) == 2


@pytest.mark.parametrize("beam", [1, 3])
def test_the_engine_decodes_as_attnkit(engine_run, beam):
    decode = engine_run.run.decode.with_overrides(beam=beam, nbest=beam)
    ours = translate(engine_run.model, engine_run.vocabs, _lines(), decode)
    assert sum(t[0].text != "" for t in ours) > 50  # the model learnt something
    theirs = translate_run(engine_run, _lines(), decode)
    assert [[h.text for h in t] for t in theirs] == [[h.text for h in t] for t in ours]  # n-best lists too
    assert [[h.finished for h in t] for t in theirs] == [[h.finished for h in t] for t in ours]
    assert [h.score for t in theirs for h in t] == pytest.approx([h.score for t in ours for h in t], abs=1e-4)


def test_the_engine_attention_equals_attnkit_greedy_attention(engine_run):
    decode = engine_run.run.decode.with_overrides(beam=1)
    ours = translate(engine_run.model, engine_run.vocabs, _lines(), decode, return_attention=True)
    theirs = translate_run(engine_run, _lines(), decode, return_attention=True)
    assert sum(not t[0].finished for t in ours) > 0 and sum(t[0].finished for t in ours) > 0  # both kinds of rows
    for a, b in zip(ours, theirs):
        assert a[0].tgt_pieces == b[0].tgt_pieces and a[0].src_pieces == b[0].src_pieces
        assert b[0].attention.shape == a[0].attention.shape == (len(a[0].tgt_pieces), len(a[0].src_pieces))
        torch.testing.assert_close(b[0].attention, a[0].attention, atol=1e-5, rtol=0)


def test_the_explorer_with_the_engine_shows_attnkit_maps(engine_run, trained):
    plain = load_run(trained, FAMILY)
    decode = plain.run.decode.with_overrides(beam=1)
    ours, theirs = explore(plain, _lines(8), decode), explore(engine_run, _lines(8), decode)
    for a, b in zip(ours, theirs):
        torch.testing.assert_close(b.nbest[0].attention, a.nbest[0].attention, atol=1e-5, rtol=0)
        assert [v.kind for v in b.views] == ["encoder", "decoder_self", "cross"]
        for u, v in zip(a.views, b.views):
            assert (u.rows, u.cols) == (v.rows, v.cols)
            torch.testing.assert_close(torch.stack(v.layers), torch.stack(u.layers), atol=1e-6, rtol=0)
        assert served(b)["tgt"] == served(a)["tgt"]


def test_translate_and_evaluate_take_the_engine(trained, tmp_path, capsys):
    src, ref = tmp_path / "src.txt", tmp_path / "ref.txt"
    src.write_text("".join(line + "\n" for line in _lines()))
    ref.write_text("".join(" ".join(line.split()[::-1]) + "\n" for line in _lines()))
    capsys.readouterr()
    assert main(["translate", str(trained), "--input", str(src), "--beam", "1"]) == 0
    ours = capsys.readouterr().out
    attention = tmp_path / "attention.jsonl"
    assert main(["translate", str(trained), "--input", str(src), "--beam", "1", "--engine", "ctranslate2", "--attention", str(attention)]) == 0
    assert capsys.readouterr().out == ours
    records = [json.loads(line) for line in attention.read_text().splitlines()]
    assert len(records) == len(_lines()) and all(len(r["attention"]) == len(r["tgt"]) for r in records)
    assert main(["evaluate", str(trained), "--src", str(src), "--ref", str(ref), "--engine", "ctranslate2", "--dtype", "int8"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["decode"]["engine"] == "ctranslate2" and report["decode"]["dtype"] == "int8" and report["bleu"] > 50


def test_bad_engine_settings_are_one_line(trained, tiny_rnn_run, tiny_sase_run, tmp_path, capsys):
    src = tmp_path / "src.txt"
    src.write_text("t1 t2\n")
    for verb in ("translate", "evaluate", "serve"):
        assert main([verb, str(trained), "--engine", "marian"]) == 2
        assert "argument --engine: invalid choice: 'marian'; choose from attnkit, ctranslate2" in capsys.readouterr().err
    cases = [
        (["translate", str(tiny_rnn_run), "--input", str(src), "--engine", "ctranslate2"], "CTranslate2 export is not supported for this model (RNNSeq2Seq)"),
        (
            ["evaluate", str(tiny_sase_run), "--labelled", str(src), "--engine", "ctranslate2"],
            "a classification run decodes with attnkit only, not --engine ctranslate2",
        ),
        (
            ["translate", str(trained), "--input", str(src), "--engine", "ctranslate2", "--workers", "2"],
            "--workers: for attnkit's own search, not --engine ctranslate2",
        ),
    ]
    for argv, message in cases:
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert message in err and err.count("\n") == 1, err
    with pytest.raises(AttnkitError, match=r"--dtype bf16: CTranslate2 has no bfloat16 on this CPU \(it has float32, int8\)"):
        engine.compute_type("bf16", {"float32", "int8"})


@pytest.mark.parametrize("verb", ["translate", "evaluate", "serve"])
def test_a_missing_ctranslate2_is_one_line_before_any_work(fresh, tmp_path, capsys, monkeypatch, verb):
    monkeypatch.setitem(sys.modules, "ctranslate2", None)  # as Python sees an uninstalled package
    src = tmp_path / "src.txt"
    src.write_text("t1 t2\n")
    argv = {"translate": ["--input", str(src)], "evaluate": ["--src", str(src), "--ref", str(src)], "serve": ["--port", "0"]}[verb]
    assert main([verb, str(fresh), *argv, "--engine", "ctranslate2"]) == 2
    assert capsys.readouterr().err == (
        f"attnkit: error: attnkit {verb} --engine ctranslate2 needs ctranslate2, which is not installed: pip install 'attnkit[export]'\n"
    )
    assert not (fresh / "engines").exists()


def test_serve_with_the_engine(engine_run, trained):
    from fastapi.testclient import TestClient

    from attnkit.serve.app import create_app

    plain = load_run(trained, FAMILY)
    with TestClient(create_app({"run": engine_run})) as client:
        info = client.get("/v1/models").json()[0]
        assert info["engine"] == "ctranslate2"
        body = client.post("/v1/translate", json={"texts": _lines(4), "beam": 1, "attention": True}).json()
    want = [served(e) for e in explore(plain, _lines(4), plain.run.decode.with_overrides(beam=1, nbest=1))]
    for got, expected in zip(body["results"], want):
        assert got["text"] == expected["text"] and got["tgt"] == expected["tgt"]
        assert torch.tensor(got["attention"]) == pytest.approx(torch.tensor(expected["attention"]), abs=2e-4)
