"""The API as its OpenAPI schema says (issue #62's fuzzing findings, each fixed): every error status documented
with the one-line `Error` body it sends, the schema stating what the server refuses (empty or blank texts, the
served limits), and JSON's true/false/0/1 kept apart as the schema keeps them."""

from __future__ import annotations

import re

import pytest
from fastapi.testclient import TestClient

from attnkit.families import load_run
from attnkit.families.protocol import NOT_BLANK
from attnkit.serve.app import Limits, create_app

POSTS = ["/v1/translate", "/v1/classify", "/v1/parse", "/v1/caption", "/v1/attention"]


@pytest.fixture(scope="module")
def client(tiny_transformer_run, tiny_sase_run):
    models = {"tiny": load_run(tiny_transformer_run), "sase": load_run(tiny_sase_run)}
    with TestClient(create_app(models, Limits(max_texts=3, max_chars=40))) as c:
        yield c


@pytest.fixture(scope="module")
def schema(client) -> dict:
    return client.get("/openapi.json").json()


def test_every_error_status_is_documented_with_the_error_body(schema):
    error = {"$ref": "#/components/schemas/Error"}
    for path in POSTS:
        responses = schema["paths"][path]["post"]["responses"]
        assert {"200", "404", "413", "422", "500"} <= set(responses), path
        for code in ("404", "413", "422", "500"):
            assert responses[code]["content"]["application/json"]["schema"] == error, (path, code)
    metrics = schema["paths"]["/v1/models/{name}/metrics"]["get"]["responses"]
    assert metrics["404"]["content"]["application/json"]["schema"] == error and "422" in metrics
    assert "HTTPValidationError" not in schema["components"]["schemas"]  # FastAPI's list of errors is never sent


def test_an_unknown_run_s_metrics_is_a_documented_404(client):
    response = client.get("/v1/models/nope/metrics")
    assert (response.status_code, response.json()) == (404, {"detail": "unknown run 'nope'; runs: tiny, sase"})


@pytest.mark.parametrize("path", ["/v1/translate", "/v1/attention"])
def test_a_body_that_is_not_utf8_is_one_422_line(client, path):
    response = client.post(path, content=b'{"texts": ["\xff\xfe"]}', headers={"Content-Type": "application/json"})
    assert (response.status_code, response.json()) == (422, {"detail": "malformed JSON body: not UTF-8 (byte 12)"})


@pytest.mark.parametrize("body", [{}, {"text": 3}, {"text": "t1", "words": "yes"}])
def test_422_bodies_fit_the_error_schema(client, body):
    response = client.post("/v1/attention", json=body)
    assert response.status_code == 422 and set(response.json()) == {"detail"} and isinstance(response.json()["detail"], str)


def test_the_schema_states_what_the_server_refuses(client, schema):
    components = schema["components"]["schemas"]
    texts = components["TranslateRequest"]["properties"]["texts"]
    assert (texts["minItems"], texts["maxItems"], texts["items"]["maxLength"], texts["items"]["pattern"]) == (1, 3, 40, NOT_BLANK)
    assert components["CaptionRequest"]["properties"]["texts"]["maxItems"] == 3
    attention = components["AttentionRequest"]["properties"]
    assert (attention["text"]["pattern"], attention["text"]["maxLength"]) == (NOT_BLANK, 40)
    assert [s.get("maxLength") for s in attention["target"]["anyOf"]] == [40, None]  # a string, or null
    # what the schema allows is what the server takes: blank texts are refused, a text with a letter is not
    for body, status in [({"texts": [""]}, 422), ({"texts": ["\u3000\x1c"]}, 422), ({"texts": ["\u3000x"]}, 200), ({"texts": []}, 422)]:
        assert client.post("/v1/classify", json=body).status_code == status, body
    assert client.post("/v1/attention", json={"text": "\t"}).status_code == 422


def test_the_not_blank_pattern_is_python_s_isspace():
    spaces = [c for c in range(0x3001) if chr(c).isspace()]
    assert [c for c in range(0x3001) if not re.fullmatch(NOT_BLANK, chr(c))] == spaces


@pytest.mark.parametrize(
    "path, body, detail",
    [
        ("/v1/classify", {"texts": ["t1"], "attention": 0}, "body.attention: Input should be a valid boolean (got 0)"),
        ("/v1/translate", {"texts": ["t1"], "nbest": True}, "body.nbest: Value error, Input should be a number, not true or false (got True)"),
        ("/v1/translate", {"texts": ["t1"], "alpha": False}, "body.alpha: Value error, Input should be a number, not true or false (got False)"),
        ("/v1/attention", {"text": "t1", "flow": 1}, "body.flow.bool: Input should be a valid boolean (got 1)"),
    ],
)
def test_booleans_and_numbers_are_not_each_other(client, path, body, detail):
    response = client.post(path, json=body)
    assert response.status_code == 422 and response.json()["detail"].startswith(detail)


def test_a_whole_number_written_as_a_float_is_an_integer(client):
    assert client.post("/v1/translate", json={"texts": ["t1"], "beam": 2.0, "nbest": 1.0}).status_code == 200


def test_the_settings_keep_their_bounds_in_the_schema(schema):
    beam = schema["components"]["schemas"]["TranslateRequest"]["properties"]["beam"]
    assert beam["anyOf"] == [{"type": "integer", "minimum": 1, "maximum": 16}, {"type": "null"}]
    output = schema["components"]["schemas"]["AttentionRequest"]["properties"]["output"]
    assert output["anyOf"] == [{"type": "integer", "minimum": 0}, {"type": "null"}]
