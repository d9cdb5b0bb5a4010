"""`attnkit serve` at length: POST /v1/long reads a document through a tiny Llama and keeps its queries and keys;
POST /v1/long/tile answers exact tiles equal to transformers' eager attention (a head or the mean, with the sink or
without it) and pooled tiles; documents are evicted by memory, least recently used first, and every refusal is one
line; the OpenAPI schema documents the routes and their limits. `attnkit report --document --long` offline."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from fastapi.testclient import TestClient
from hf_tiny import transformers

from attnkit.cli import main
from attnkit.serve.app import Limits, create_app, load_hf

A = "the cats sat on the mat . a dog ran and sat . hello world , the cat sat ."
B = "a dog sat on the mat and the cats ran ."


def _eager(folder, text: str) -> list[torch.Tensor]:
    tokenizer = transformers.AutoTokenizer.from_pretrained(folder)
    model = transformers.LlamaForCausalLM.from_pretrained(folder, attn_implementation="eager").eval()
    with torch.inference_mode():
        return [a[0] for a in model(**tokenizer(text, return_tensors="pt"), output_attentions=True).attentions]


def _without_sink(a: torch.Tensor) -> torch.Tensor:
    rest = a.clone()
    rest[..., 0] = 0
    total = rest.sum(-1, keepdim=True)
    return torch.where(total > 0, rest / total.clamp_min(1e-30), rest)


@pytest.fixture(scope="module")
def models(hf_folder):
    return load_hf([str(hf_folder("llama")), str(hf_folder("bert"))])


def _client(models, **limits) -> TestClient:
    return TestClient(create_app({}, Limits(**limits), hf=models))


def test_exact_and_pooled_tiles(models, hf_folder):
    client = _client(models)
    read = client.post("/v1/long", json={"model": "llama", "document": A})
    assert read.status_code == 200, read.text
    body = read.json()
    n, key, long = body["tokens"], body["document"], body["record"]["long"]
    reference = _eager(hf_folder("llama"), A)  # per layer (H, N, N)
    assert not body["cached"] and n == reference[0].size(-1) and long["document"] == key and long["levels"] == [64]
    assert list(long["pooled"]) == ["64"] and np.array(long["grids"]["sink"]).shape == (2, 4)
    np.testing.assert_allclose(long["grids"]["sink"], torch.stack([a[..., 0].mean(-1) for a in reference]).numpy(), atol=1e-4)
    for layer, a in enumerate(reference, 1):
        for head, sink in ((None, True), (2, False)):
            tile = {"document": key, "layer": layer, "head": head, "level": 1, "q0": 3, "q1": n, "k0": 1, "k1": 9, "sink": sink}
            got = client.post("/v1/long/tile", json=tile)
            assert got.status_code == 200, got.text
            full = a if sink else _without_sink(a)
            want = full.mean(0) if head is None else full[head]
            np.testing.assert_allclose(got.json()["values"], want[3:n, 1:9].numpy(), atol=1e-5, rtol=0)
        pooled = client.post("/v1/long/tile", json={"document": key, "layer": layer, "level": 64, "q0": 0, "q1": 1, "k0": 0, "k1": 1}).json()
        assert pooled["values"][0] == pytest.approx([float(a.mean(0).mean())], abs=1e-6)  # one tile: the mean of the map, masked cells as zeros
    again = client.post("/v1/long", json={"model": "llama", "document": A}).json()
    assert again["cached"] and again["document"] == key


def test_documents_are_evicted_by_memory(models):
    size = _client(models).post("/v1/long", json={"document": A}).json()
    one = _client(models).get("/v1/long").json()
    assert one["documents"] == [] and "--long-cache" in one["keeps"]
    client = _client(models, long_cache=10**9)
    client.post("/v1/long", json={"document": A})
    nbytes = client.get("/v1/long").json()["documents"][0]["bytes"]
    client = _client(models, long_cache=int(1.5 * nbytes))
    a = client.post("/v1/long", json={"document": A}).json()["document"]
    b = client.post("/v1/long", json={"document": B}).json()
    assert b["evicted"] == [a] and a == size["document"]
    assert [d["document"] for d in client.get("/v1/long").json()["documents"]] == [b["document"]]
    tile = {"document": a, "layer": 1, "q0": 0, "q1": 2, "k0": 0, "k1": 2}
    gone = client.post("/v1/long/tile", json=tile)
    assert (
        gone.status_code == 410
        and gone.json()["detail"] == f"document {a} was evicted from memory (--long-cache {int(1.5 * nbytes) / 2**20:.1f} MiB): POST /v1/long with it again"
    )
    assert client.post("/v1/long/tile", json={**tile, "document": "0" * 16}).status_code == 404
    assert client.post("/v1/long", json={"document": A}).json()["evicted"] == [b["document"]]  # read again on demand
    assert client.post("/v1/long/tile", json=tile).status_code == 200
    small = _client(models, long_cache=1000).post("/v1/long", json={"document": A})
    assert small.status_code == 413 and "over the whole --long-cache of" in small.json()["detail"]


def test_refusals_are_one_line(models):
    client = _client(models, long_chars=100)
    key = client.post("/v1/long", json={"document": A}).json()["document"]
    cases = [
        ("/v1/long", {"model": "bert", "document": A}, 422, "bert: long documents go through decoder (causal language) models; this one is an encoder"),
        ("/v1/long", {"model": "nope", "document": A}, 404, "unknown Hugging Face decoder 'nope'; decoders served: llama"),
        ("/v1/long", {"document": "the " * 30}, 413, "document: 120 characters, at most 100 (--long-max-chars)"),
        ("/v1/long", {"document": "  "}, 422, "document: empty text"),
        ("/v1/long/tile", {"document": key, "layer": 3, "q0": 0, "q1": 1, "k0": 0, "k1": 1}, 422, "layer: 3; the document has layers 1 to 2"),
        ("/v1/long/tile", {"document": key, "layer": 1, "level": 5, "q0": 0, "q1": 1, "k0": 0, "k1": 1}, 422,
         "level: 5; give 1 (exact) or a pooled level, 64, 256, 1024"),
        ("/v1/long/tile", {"document": key, "layer": 1, "head": 4, "q0": 0, "q1": 1, "k0": 0, "k1": 1}, 422, "head: 4; the model has heads 0 to 3"),
        ("/v1/long/tile", {"document": key, "layer": 1, "level": 64, "q0": 0, "q1": 2, "k0": 0, "k1": 1}, 422,
         "q0, q1: 0, 2; give 0 <= q0 < q1 <= 1 (the document's tiles at level 64)"),
    ]  # fmt: skip
    for path, body, status, detail in cases:
        response = client.post(path, json=body)
        assert (response.status_code, response.json()["detail"]) == (status, detail)
    assert _client(models).get("/v1/long").json()["models"] == ["llama"]  # the page's picker: the decoders, not the BERT
    alone = TestClient(create_app({}, Limits(), hf={"bert": models["bert"]})).post("/v1/long", json={"document": A})
    assert (alone.status_code, alone.json()["detail"]) == (404, "no Hugging Face decoder is served; decoders served: none (serve --hf MODEL)")
    long = _client(models).post("/v1/long", json={"document": "the cat " * 40})  # 80 tokens, the model takes 32
    assert long.status_code == 422 and long.json()["detail"].endswith("llama: the text is 120 tokens, the model takes at most 32")  # no --truncate
    long = _client(models).post("/v1/attention", json={"model": "bert", "text": "the cat " * 40})
    assert long.status_code == 422 and long.json()["detail"].endswith("bert: the text is 122 tokens, the model takes at most 32")


def test_the_schema_documents_the_routes_and_limits(models):
    schema = _client(models, long_chars=1234).get("/openapi.json").json()
    assert schema["components"]["schemas"]["LongRequest"]["properties"]["document"]["maxLength"] == 1234
    tile = schema["paths"]["/v1/long/tile"]["post"]
    assert {"404", "410", "413", "422"} <= set(tile["responses"]) and "--long-cache" in tile["description"]
    assert "--long-cache" in schema["paths"]["/v1/long"]["post"]["description"]
    page = _client(models).get("/long").text
    assert "long-view.js" in page and 'href="/long"' in page


def test_offline_report_keeps_levels_and_rows(hf_folder, tmp_path, capsys):
    doc = tmp_path / "doc.txt"
    doc.write_text(A, encoding="utf-8")
    out = tmp_path / "long.html"
    assert main(["report", str(hf_folder("llama")), "--document", str(doc), "--long", "--rows", "-1", "2", "--out", str(out)]) == 0
    html = out.read_text(encoding="utf-8")
    record = json.loads(html.split('id="attention-data">', 1)[1].split("</script>", 1)[0])[0]
    long = record["long"]
    assert long["document"] is None and list(long["pooled"]) == ["64"] and long["rows"]["positions"] == [2, len(long["tokens"]) - 1]
    assert len(long["rows"]["data"]) == 2 and len(long["rows"]["data"][0]) == 4 and "AttnLong" in html


def test_an_offline_report_of_a_run_at_length_is_refused_in_one_line(tiny_transformer_run, tmp_path, capsys):
    doc = tmp_path / "doc.txt"
    doc.write_text("t1 t2", encoding="utf-8")
    assert main(["report", str(tiny_transformer_run), "--document", str(doc), "--long", "--out", str(tmp_path / "x.html")]) == 2
    assert capsys.readouterr().err.strip().splitlines() == [
        f"attnkit: error: {tiny_transformer_run}: --long reads Hugging Face decoder and encoder models; attnkit runs take the full maps (leave out --long)"
    ]


def test_a_long_document_has_its_own_body_limit(models):
    client = _client(models, max_texts=1, max_chars=10, long_chars=100)  # other routes: at most 1 * (6 * 10 + 8) + 4096 bytes
    assert client.post("/v1/long", json={"document": "the dog . " * 10}).status_code == 200  # 100 characters, 30 tokens
    big = client.post("/v1/long", content=b'{"document": "' + b"the " * 2000 + b'"}', headers={"content-type": "application/json"})
    assert big.status_code == 413 and big.json()["detail"] == f"request body of {8016} bytes, at most {6 * 100 + 4096}"
    assert client.post("/v1/attention", content=b'{"text": "' + b"a" * 5000 + b'"}', headers={"content-type": "application/json"}).status_code == 413
