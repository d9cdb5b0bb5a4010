"""`attnkit serve` fuzzed from its own OpenAPI schema, briefly (benchmarks/fuzz_serve.py runs it at length):
a translation run, a classifier, a tiny BERT classifier and GPT-2; no server error, every answer as the
schema documents it, schema-valid requests accepted, and the server still answering after."""

from __future__ import annotations

import httpx
import pytest
from fastapi import FastAPI, HTTPException
from fastapi.responses import JSONResponse
from pydantic import BaseModel

pytest.importorskip("schemathesis")
pytest.importorskip("transformers")

from attnkit.families import load_run  # noqa: E402
from attnkit.serve.app import create_app, load_hf  # noqa: E402
from benchmark_scripts import load_benchmark  # noqa: E402

fuzz_serve = load_benchmark("fuzz_serve")


def test_the_api_keeps_to_its_schema(serve_app, tiny_transformer_run, tiny_sase_run, tmp_path):
    hf_tiny = fuzz_serve._load_test_helper(fuzz_serve.TESTS / "sources" / "hf_tiny.py")
    hf = load_hf([str(hf_tiny.build(name, tmp_path / name)) for name in ("bert", "gpt2")])
    server = serve_app(create_app({"tiny": load_run(tiny_transformer_run), "sase": load_run(tiny_sase_run)}, hf=hf))
    found = fuzz_serve.fuzz(server.url, examples=12)
    assert found["failures"] == []
    statuses = found["statuses"]
    assert not [s for modes in statuses.values() for c in modes.values() for s in c if s.startswith("5")]
    assert statuses["POST /v1/attention"]["positive"].get("200", 0) > 0 and statuses["POST /v1/classify"]["positive"].get("200", 0) > 0
    assert sum(n for modes in statuses.values() for c in modes.values() for n in c.values()) >= 100
    assert httpx.get(f"{server.url}/healthz").json() == {"status": "ok", "models": 2}


def test_the_harness_reports_each_failed_check_with_its_request(serve_app):
    """It can fail: an undocumented status, a body off its schema and a server error are each caught."""
    app = FastAPI()

    @app.get("/teapot", response_model=Ok)
    async def teapot() -> Ok:
        raise HTTPException(418, "short and stout")

    @app.get("/wrong", response_model=Ok)
    async def wrong() -> JSONResponse:
        return JSONResponse({"ok": "yes"})

    @app.get("/broken", response_model=Ok)
    async def broken() -> Ok:
        raise RuntimeError("boom")

    server = serve_app(app)
    found = fuzz_serve.fuzz(server.url, examples=2)
    failed = {(f["operation"], f["check"].split()[0]) for f in found["failures"]}
    assert {("GET /teapot", "ST103"), ("GET /wrong", "ST108"), ("GET /broken", "ST101")} <= failed
    assert all(f["request"].startswith("curl ") for f in found["failures"])


class Ok(BaseModel):
    ok: bool
