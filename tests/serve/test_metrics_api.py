"""`GET /v1/models/{name}/metrics`: a served run's training curves as JSON, and its error answers."""

from __future__ import annotations

import shutil

import pytest
from fastapi.testclient import TestClient

from attnkit.families import load_run, run_family
from attnkit.serve.app import create_app
from attnkit.viz.curves import run_curves


@pytest.fixture(scope="module")
def trained_copy(tiny_trained_run, tmp_path_factory):
    """A copy of the trained run, for the test that breaks its metrics.jsonl."""
    return shutil.copytree(tiny_trained_run, tmp_path_factory.mktemp("copy") / "broken")


@pytest.fixture(scope="module")
def client(tiny_trained_run, tiny_transformer_run, trained_copy):
    models = {"toy": load_run(tiny_trained_run), "tiny": load_run(tiny_transformer_run), "broken": load_run(trained_copy)}
    with TestClient(create_app(models)) as c:
        yield c


def test_metrics_of_a_trained_run(client, tiny_trained_run):
    response = client.get("/v1/models/toy/metrics")
    assert response.status_code == 200
    body = response.json()
    assert body["model"] == "toy" and body["note"] is None
    assert body["curves"] == run_curves(tiny_trained_run, run_family(tiny_trained_run).run_schema.METRICS).to_json()
    assert [p["label"] for p in body["curves"]["panels"]] == ["loss", "learning rate", "BLEU"]
    assert "/v1/models/{name}/metrics" in client.get("/openapi.json").json()["paths"]


def test_metrics_errors(client, tiny_transformer_run, trained_copy):
    response = client.get("/v1/models/nope/metrics")
    assert (response.status_code, response.json()["detail"]) == (404, "unknown run 'nope'; runs: toy, tiny, broken")
    response = client.get("/v1/models/tiny/metrics")  # a normal state: 200, no curves, a note
    assert response.status_code == 200
    assert response.json() == {"model": "tiny", "curves": None, "note": f"{tiny_transformer_run / 'metrics.jsonl'}: no metrics yet"}
    with (trained_copy / "metrics.jsonl").open("a", encoding="utf-8") as f:
        f.write("not json\n")
    response = client.get("/v1/models/broken/metrics")
    assert response.status_code == 422
    assert response.json()["detail"] == f"{trained_copy / 'metrics.jsonl'}, line 9: not JSON (Expecting value at column 1)"


def test_the_attention_page_loads_the_curves_script(client):
    html = client.get("/attention").text
    assert '<div id="curves"></div>' in html and html.index("/static/curves.js") < html.index("/static/attention-page.js")
    assert "const AttnCurves" in client.get("/static/curves.js").text
