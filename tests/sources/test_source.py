"""The `Source` protocol (sources/source.py): a run folder and a Hugging Face model (a tiny random-weight one
built from its config, `hf_tiny`) each say what they are and give the same things to the explorer, the npz,
faithfulness and `serve`'s source list; and the hub and safety checks are the ones the Marian import uses."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest
from hf_tiny import TEXT

from attnkit.artifacts.hf import check_folder, resolve
from attnkit.errors import AttnkitError
from attnkit.sources import AttentionOptions, Source, export_attention, is_run, open_source
from attnkit.sources.npz import npz_writer, write_record
from attnkit.sources.page import page_record
from attnkit.sources.record import explain_inputs
from attnkit.sources.source import HfSource, RunSource


def _sources(tiny_transformer_run, hf_folder) -> dict[str, Source]:
    return {"run": open_source(str(tiny_transformer_run)), "hf": open_source(str(hf_folder("bert")))}


def test_each_source_says_what_it_is_and_how_pages_name_it(tiny_transformer_run, hf_folder):
    run, hf = _sources(tiny_transformer_run, hf_folder).values()
    assert isinstance(run, RunSource) and run.origin == "run" and run.name == tiny_transformer_run.name
    assert isinstance(hf, HfSource) and hf.origin == "hf" and hf.name == str(hf_folder("bert"))
    assert is_run(tiny_transformer_run) and not is_run(hf_folder("bert"))
    assert run.loaded.folder == tiny_transformer_run and hf.hf.arch == "encoder"
    for source in (run, hf):  # what the protocol asks, and nothing by type
        assert all(callable(getattr(source, m)) for m in ("read", "check_scored", "scored_outputs", "renderer", "curves", "files"))


@pytest.mark.parametrize("which, text", [("run", "t1 t2 t3"), ("hf", TEXT)])
def test_one_record_gives_the_npz_and_the_page_the_same_maps(which, text, tiny_transformer_run, hf_folder, tmp_path):
    source = _sources(tiny_transformer_run, hf_folder)[which]
    (record,) = explain_inputs(source, [text])
    kinds = {v.kind: len(v.layers) for v in record.views if v.role != "summary"}
    npz = export_attention(str(tiny_transformer_run if which == "run" else hf_folder("bert")), text, tmp_path / "a.npz", AttentionOptions())
    assert npz["kinds"] == kinds and npz["out"] == str(tmp_path / "a.npz") and npz["summaries"] == ["rollout", *(["rollout_encoder"] if which == "run" else [])]
    z = np.load(tmp_path / "a.npz")
    for view in record.views:
        for layer, weights in enumerate(view.layers, 1):
            name = view.kind if view.role == "summary" else f"{view.kind}/layer{layer}"
            np.testing.assert_allclose(z[name], weights[0].numpy() if view.role == "summary" else weights.numpy(), atol=1e-6)
    page = page_record(source, text)
    assert page["model"] == source.name and list(page["maps"]) == [v.kind for v in record.views]


def test_files_are_what_makes_the_model(tiny_transformer_run, hf_folder):
    run, hf = _sources(tiny_transformer_run, hf_folder).values()
    assert tiny_transformer_run / "run.json" in run.files() and any(p.suffix == ".safetensors" for p in run.files())
    assert {p.name for p in hf.files()} >= {"config.json", "model.safetensors"}


def test_faithfulness_asks_the_source(tiny_transformer_run, tiny_rnn_run, hf_folder):
    run, hf = _sources(tiny_transformer_run, hf_folder).values()
    run.check_scored()
    (scored,) = hf.scored_outputs(TEXT, flow=False, truncate=False)
    assert scored.label.startswith("class ") and 0.0 < scored.p <= 1.0
    assert len(run.scored_outputs("t1 t2", flow=False, truncate=False)) >= 1
    with pytest.raises(AttnkitError, match="no sequence-classification head"):
        open_source(str(hf_folder("roberta"))).check_scored()


def test_serve_lists_each_source_by_its_origin(tiny_transformer_run, hf_folder):
    pytest.importorskip("fastapi")
    from fastapi.testclient import TestClient

    from attnkit.serve.app import create_app, load_hf, load_models

    models = load_models([str(tiny_transformer_run)])
    with TestClient(create_app(models, hf=load_hf([str(hf_folder("bert"))]))) as client:
        listed = client.get("/v1/sources").json()
        assert listed == [{"name": tiny_transformer_run.name, "type": "run"}, {"name": "bert", "type": "hf"}]
        record = client.post("/v1/attention", json={"model": "bert", "text": TEXT}).json()["record"]
    assert record["model"] == str(hf_folder("bert")) and "encoder" in record["maps"]


def test_one_check_for_the_explorer_and_the_marian_import(hf_folder, tmp_path, capsys):
    """`artifacts.hf.check_folder` refuses model code and pickles for `attnkit attention` and `import hf` alike."""
    from attnkit.cli import main

    folder = shutil.copytree(hf_folder("marian"), tmp_path / "marian")
    assert check_folder(folder, "m")["model_type"] == "marian" and resolve(str(folder)) == folder
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**config, "auto_map": {"AutoModel": "evil.Model"}}))
    lines = []
    for argv in (["attention", str(folder), TEXT, "--out", str(tmp_path / "a.npz")], ["import", "hf", str(folder), "--out", str(tmp_path / "run")]):
        assert main(argv) == 2
        lines.append(capsys.readouterr().err.strip().splitlines()[-1])
    assert lines[0] == lines[1] and "needs its own code" in lines[0] and "trust_remote_code" in lines[0]
    with pytest.raises(AttnkitError, match="is a file"):
        resolve(str(folder / "config.json"))
    with npz_writer(tmp_path / "b.npz") as writer:  # a record kept in memory writes the same npz
        write_record(writer, explain_inputs(open_source(str(hf_folder("bert"))), [TEXT])[0])
    assert {"encoder/layer1", "encoder/queries", "rollout", "tokens"} <= set(np.load(tmp_path / "b.npz"))
