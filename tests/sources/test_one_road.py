"""One road from a model to every output (issue 59): with the one record builder (`sources.record.explain_inputs`)
blocked, no output can be made, for an attnkit run or a Hugging Face model; with it, every output is the
serialization of what it returned."""

from __future__ import annotations

import base64

import numpy as np
import pytest
from hf_tiny import TEXT

import attnkit
from attnkit.cli import main
from attnkit.sources import open_source
from attnkit.sources.page import page_record
from attnkit.sources.record import explain_inputs

RUN_TEXT = "t1 t2 t3"


class Blocked(Exception):
    """What the blocked builder raises: an output that reached it."""


@pytest.fixture
def blocked(monkeypatch):
    def builder(*args, **kwargs):
        raise Blocked

    monkeypatch.setattr("attnkit.sources.record.explain_inputs", builder)


def _source(which: str, request) -> tuple[str, str]:
    if which == "run":
        return str(request.getfixturevalue("tiny_transformer_run")), RUN_TEXT
    return str(request.getfixturevalue("hf_folder")("bert")), TEXT


@pytest.mark.parametrize("which", ["run", "hf"])
@pytest.mark.parametrize(
    "output",
    [
        lambda s, t, d: main(["report", s, t, "--out", str(d / "r.html")]),
        lambda s, t, d: main(["attention", s, t, "--out", str(d / "a.npz")]),
        lambda s, t, d: main(["plot", s, t, "--view", "heatmap", "--out", str(d / "p.png")]),
        lambda s, t, d: main(["plot", s, t, "--out", str(d / "maps")]),
        lambda s, t, d: attnkit.show(s, t).html,
        lambda s, t, d: main(["faithfulness", s, t, "--out", str(d / "f"), "--methods", "attention"]),
    ],
    ids=["report", "attention", "plot --view", "plot", "show", "faithfulness"],
)
def test_no_output_is_made_without_the_one_builder(which, output, request, tmp_path, blocked):
    source, text = _source(which, request)
    with pytest.raises(Blocked):
        output(source, text, tmp_path)


def test_the_explain_page_goes_through_it(tiny_sase_run, tmp_path, blocked):
    """`explain --out X.html` (a classifier's family verb) is the report page: the family writes no record."""
    with pytest.raises(Blocked):
        main(["explain", str(tiny_sase_run), RUN_TEXT, "--out", str(tmp_path / "e.html")])


def test_heads_reads_the_records_too(tiny_transformer_run, tmp_path, blocked):
    (tmp_path / "in.txt").write_text("t1 t2 t3\n", encoding="utf-8")
    with pytest.raises(Blocked):
        main(["heads", str(tiny_transformer_run), "--input", str(tmp_path / "in.txt"), "--out", str(tmp_path / "heads")])


@pytest.mark.parametrize("which", ["run", "hf"])
def test_serve_attention_goes_through_it(which, request, blocked):
    pytest.importorskip("fastapi")
    from fastapi.testclient import TestClient

    from attnkit.serve.app import create_app, load_hf, load_models

    source, text = _source(which, request)
    app = create_app(load_models([source])) if which == "run" else create_app({}, hf=load_hf([source]))
    with TestClient(app) as client:
        response = client.post("/v1/attention", json={"text": text})
    assert response.status_code == 500 and "Blocked" in response.json()["detail"]


@pytest.mark.parametrize("which", ["run", "hf"])
def test_the_page_and_the_npz_serialize_the_same_record(which, request, tmp_path):
    """The page's bytes and the npz's floats are one record's layers: each byte within half a step of the float."""
    source, text = _source(which, request)
    (record,) = explain_inputs(open_source(source), [text])
    page = page_record(open_source(source), text)
    assert list(page["maps"]) == [v.kind for v in record.views] and page["schema"] == 2
    assert main(["attention", source, text, "--out", str(tmp_path / "a.npz")]) == 0
    z = np.load(tmp_path / "a.npz")
    for view in (v for v in record.views if v.role != "summary"):
        entry = page["maps"][view.kind]
        for l, weights in enumerate(view.layers):
            np.testing.assert_allclose(z[f"{view.kind}/layer{l + 1}"], weights.numpy(), atol=1e-6)
            for h, w in enumerate(weights.numpy()):  # (Tq, Tk)
                byte = np.frombuffer(base64.b64decode(entry["data"][l][h]), np.uint8).reshape(w.shape)
                scale = entry["scale"][l][h]
                assert np.abs(byte / 255 * scale - w).max() <= scale / 510 + 1e-6
