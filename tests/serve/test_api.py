"""The JSON API: answers, every error path (status and message), OpenAPI and the pages."""

from __future__ import annotations

import re
import socket

import pytest
import torch
from fastapi.testclient import TestClient

import attnkit.families.translation.api as translation_api
from attnkit.cli import main
from attnkit.errors import AttnkitError
from attnkit.families import FAMILIES, load_run
from attnkit.families.classification.infer import classify_texts
from attnkit.families.translation.api import result as served
from attnkit.families.translation.explore import explore, explore_decode
from attnkit.serve.app import Limits, create_app, load_models


@pytest.fixture(scope="module")
def loaded(tiny_transformer_run, tiny_rnn_run, tiny_sase_run):
    return {"tiny": load_run(tiny_transformer_run), "rnn": load_run(tiny_rnn_run), "sase": load_run(tiny_sase_run)}


@pytest.fixture(scope="module")
def client(loaded):
    with TestClient(create_app(loaded, Limits(max_texts=3, max_chars=40))) as c:
        yield c


def test_translate_returns_the_explained_records(client, loaded):
    response = client.post("/v1/translate", json={"texts": ["t1 t2 t3", "t4 t5"], "beam": 2, "attention": True})
    assert response.status_code == 200
    body = response.json()
    assert body["model"] == "tiny"  # the first translation model is the default
    expected = [served(e) for e in explore(loaded["tiny"], ["t1 t2 t3", "t4 t5"], explore_decode(loaded["tiny"].run.decode, beam=2))]
    for got, want in zip(body["results"], expected):
        assert got["text"] == want["text"] and got["nbest"] == want["nbest"] and got["src"] == want["src"]
        assert got["maps"]["cross"]["rows"] == want["maps"]["cross"]["rows"]
        for kind in ("encoder", "decoder_self", "cross"):
            torch.testing.assert_close(torch.tensor(got["maps"][kind]["layers"]), torch.tensor(want["maps"][kind]["layers"]), atol=2e-4, rtol=0)
    assert [r["id"] for r in body["results"]] == [0, 1]


def test_translate_without_attention_and_by_model_name(client):
    body = client.post("/v1/translate", json={"model": "rnn", "texts": ["t1 t2"], "beam": 1}).json()
    (result,) = body["results"]
    assert body["model"] == "rnn" and result["attention"] is None and result["maps"] is None and len(result["nbest"]) == 1


@pytest.mark.parametrize(
    "body, status, detail",
    [
        ({"texts": ["t1", "  "]}, 422, "texts[1]: empty text"),
        ({"texts": []}, 422, "texts: give at least one text"),
        ({"texts": ["t1"] * 4}, 413, "texts: 4 texts, at most 3 per request"),
        ({"texts": ["t1 " * 20]}, 413, "texts[0]: 60 characters, at most 40 per text"),
        ({"texts": ["t1"], "model": "nope"}, 404, "unknown model 'nope'; loaded: tiny, rnn, sase"),
        ({"texts": ["t1"], "beam": 0}, 422, "body.beam: Input should be greater than or equal to 1 (got 0)"),
        ({"texts": ["t1"], "beam": 2, "nbest": 3}, 422, "decode: nbest (3) must be <= beam (2)"),
        ({"text": ["t1"]}, 422, "body.texts: Field required; body.text: Extra inputs are not permitted (got ['t1'])"),
        ({"texts": "t1"}, 422, "body.texts: Input should be a valid list (got 't1')"),
    ],
)
def test_translate_errors(client, body, status, detail):
    response = client.post("/v1/translate", json=body)
    assert (response.status_code, response.json()) == (status, {"detail": detail})


def test_oversized_body_is_refused_before_parsing(client):
    body = b'{"texts": ["' + b"t1 " * 10_000 + b'"]}'  # Limits(3, 40).max_body = 3 * (6 * 40 + 8) + 4096 = 4840
    response = client.post("/v1/translate", content=body, headers={"Content-Type": "application/json"})
    assert (response.status_code, response.json()) == (413, {"detail": f"request body of {len(body)} bytes, at most 4840"})


def test_malformed_json(client):
    response = client.post("/v1/translate", content=b'{"texts": ["t1",', headers={"Content-Type": "application/json"})
    assert response.status_code == 422
    assert response.json()["detail"].startswith("malformed JSON body: ")


def test_classify_returns_label_probabilities_and_hops(client, loaded):
    response = client.post("/v1/classify", json={"texts": ["t1 t2 t3", "T4 t9"], "attention": True})
    assert response.status_code == 200
    body = response.json()
    assert body["model"] == "sase"
    for got, want, text in zip(body["results"], classify_texts(loaded["sase"], ["t1 t2 t3", "T4 t9"]), ["t1 t2 t3", "T4 t9"]):
        assert (got["text"], got["label"], got["tokens"]) == (text, want.label, want.tokens)
        assert got["probs"] == pytest.approx(want.probs) and sum(got["probs"].values()) == pytest.approx(1.0)
        assert len(got["attention"]) == 2 and all(sum(hop) == pytest.approx(1.0) for hop in got["attention"])  # r = 2 hops
    (plain,) = client.post("/v1/classify", json={"texts": ["t1"]}).json()["results"]
    assert plain["attention"] is None and plain["tokens"] == ["t1"]


def test_classify_errors(client, loaded):
    for body, status, detail in [
        ({"texts": ["t1"], "model": "tiny"}, 422, "model 'tiny' is a translation model; use /v1/translate"),
        ({"texts": [""]}, 422, "texts[0]: empty text"),
        ({"texts": ["t1"] * 4}, 413, "texts: 4 texts, at most 3 per request"),
    ]:
        response = client.post("/v1/classify", json=body)
        assert (response.status_code, response.json()) == (status, {"detail": detail})
    response = client.post("/v1/translate", json={"texts": ["t1"], "model": "sase"})
    assert (response.status_code, response.json()["detail"]) == (422, "model 'sase' is a classification model; use /v1/classify")
    with TestClient(create_app({"rnn": loaded["rnn"]})) as only_translation:
        response = only_translation.post("/v1/classify", json={"texts": ["t1"]})
    assert (response.status_code, response.json()["detail"]) == (404, "no classification model loaded (loaded: rnn)")


def test_model_error_is_500_and_the_server_keeps_serving(client, monkeypatch):
    def broken(*args, **kwargs):
        raise RuntimeError("out of memory")

    monkeypatch.setattr(translation_api, "explore", broken)
    response = client.post("/v1/translate", json={"texts": ["t1"]})
    assert (response.status_code, response.json()) == (500, {"detail": "model 'tiny' failed: RuntimeError: out of memory"})
    monkeypatch.undo()
    assert client.post("/v1/translate", json={"texts": ["t1"]}).status_code == 200


def test_models_health_openapi_and_pages(client):
    assert client.get("/healthz").json() == {"status": "ok", "models": 3}
    models = {m["name"]: m for m in client.get("/v1/models").json()}
    assert models["tiny"]["task"] == "translation" and models["tiny"]["beam"] == 3 and models["rnn"]["kind"] == "rnn"
    assert models["sase"]["task"] == "classification" and "beam" not in models["sase"]
    assert models["tiny"]["batching"]["max_batch"] == 32
    schema = client.get("/openapi.json").json()
    assert {"/v1/translate", "/v1/classify", "/v1/models", "/healthz", "/v1/attention", "/v1/sources", "/v1/long", "/v1/long/tile"} <= set(schema["paths"])
    assert client.get("/docs").status_code == 404  # Swagger UI would load from a CDN
    pages = [path for family in FAMILIES.values() for path in family.api.pages] + ["/attention", "/long"]  # the explorer's pages last
    assert {"/", "/classify", "/parse", "/caption"} <= set(pages)
    for page in pages:
        html = client.get(page).text
        assert not re.search(r"https?://(?!www\.w3\.org/2000/svg\b)", html)
        # One template: every page's navigation links every family's page, in the table's order.
        nav = re.search(r"<nav>(.*)</nav>", html).group(1)
        assert re.findall(r'href="([^"]+)"', nav) == [*pages, "/openapi.json"]
        assert html.count("<head>") == 1 and '<main id="results">' in html and 'src="/static/attention.js"' in html
        for asset in re.findall(r'(?:src|href)="(/static/[^"]+)"', html):
            response = client.get(asset)
            assert response.status_code == 200 and not re.search(r"https?://(?!www\.w3\.org/2000/svg\b)", response.text), asset
    assert client.get("/static/app.py").status_code == 404


def test_two_runs_with_one_name(tiny_transformer_run):
    with pytest.raises(AttnkitError, match="two runs named 'tiny-transformer'"):
        load_models([str(tiny_transformer_run), str(tiny_transformer_run)])


def test_serve_on_a_busy_port_is_one_line(tiny_transformer_run, capsys):
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        assert main(["serve", str(tiny_transformer_run), "--port", str(port)]) == 2
    assert capsys.readouterr().err == f"attnkit: error: cannot listen on 127.0.0.1:{port}: Address already in use\n"
