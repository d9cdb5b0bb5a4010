"""Oversize request bodies: 413 with the limit, before any JSON is parsed, with a Content-Length or
without one (chunked), through the app and through a real uvicorn server on 127.0.0.1."""

from __future__ import annotations

import asyncio
import socket

import httpx
import pytest
from fastapi.testclient import TestClient

from attnkit.families import load_run
from attnkit.serve.app import Limits, create_app
from attnkit.serve.body_limit import BodyLimit

FIFTY_MB = 50_000_000
LIMIT = Limits(max_texts=3, max_chars=40).max_body  # 3 * (6 * 40 + 8) + 4096 = 4840
HEADERS = {"Content-Type": "application/json"}


def chunks(total: int, size: int = 1 << 20):
    """A body of `total` bytes as a generator: httpx sends it chunked, without a Content-Length."""
    for start in range(0, total, size):
        yield b" " * min(size, total - start)


@pytest.fixture(scope="module")
def client(tiny_transformer_run):
    with TestClient(create_app({"tiny": load_run(tiny_transformer_run)}, Limits(max_texts=3, max_chars=40))) as c:
        yield c


def test_fifty_megabytes_with_a_content_length_get_413(client):
    response = client.post("/v1/translate", content=b" " * FIFTY_MB, headers=HEADERS)
    assert (response.status_code, response.json()) == (413, {"detail": f"request body of {FIFTY_MB} bytes, at most {LIMIT}"})


def test_a_chunked_body_is_counted_and_capped(client):
    response = client.post("/v1/translate", content=chunks(FIFTY_MB), headers=HEADERS)
    detail = f"request body of more than {LIMIT} bytes (no Content-Length), at most {LIMIT}"
    assert (response.status_code, response.json()) == (413, {"detail": detail})


def test_a_chunked_body_under_the_cap_is_served(client):
    body = b'{"texts": ["t1 t2"], "beam": 1}'
    response = client.post("/v1/translate", content=iter([body[:10], body[10:]]), headers=HEADERS)
    assert response.status_code == 200 and len(response.json()["results"]) == 1


def test_the_app_never_sees_more_than_the_cap(monkeypatch):
    """An endless body: the middleware stops keeping it at the cap, drains what comes for
    `DRAIN_SECONDS` at most, and answers without calling the app."""
    calls, sent = [], []

    async def app(scope, receive, send):
        calls.append(scope)

    async def endless():
        await asyncio.sleep(0)
        return {"type": "http.request", "body": b"x" * 1000, "more_body": True}

    async def send(message):
        sent.append(message)

    scope = {"type": "http", "method": "POST", "path": "/v1/translate", "headers": [(b"transfer-encoding", b"chunked")]}
    middleware = BodyLimit(app, max_body=4096)
    monkeypatch.setattr("attnkit.serve.body_limit.DRAIN_SECONDS", 0.2)
    asyncio.run(middleware(scope, endless, send))
    assert not calls and sent[0]["status"] == 413 and b"more than 4096 bytes" in sent[1]["body"]


@pytest.fixture(scope="module")
def http(live_server):
    with httpx.Client(base_url=live_server.url, timeout=60) as c:
        yield c


def test_a_real_server_answers_413_not_a_reset(http, live_server):
    limit = Limits(max_texts=16, max_chars=200).max_body  # the live server's (tests/serve/conftest.py)
    response = http.post("/v1/translate", content=b" " * FIFTY_MB, headers=HEADERS)
    assert (response.status_code, response.json()) == (413, {"detail": f"request body of {FIFTY_MB} bytes, at most {limit}"})
    response = http.post("/v1/translate", content=chunks(FIFTY_MB), headers=HEADERS)
    assert response.status_code == 413 and f"more than {limit} bytes" in response.json()["detail"]
    assert http.get("/healthz").status_code == 200  # and it keeps serving


def test_expect_100_continue_is_answered_before_the_body(live_server):
    """curl sends `Expect: 100-continue` for large bodies: the 413 comes before it sends any."""
    host, port = live_server.url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=10) as s:
        s.sendall(b"POST /v1/translate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                  b"Content-Length: 50000000\r\nExpect: 100-continue\r\n\r\n")  # fmt: skip
        reply = b""
        while b"\r\n\r\n" not in reply or not reply.rstrip().endswith(b"}"):
            data = s.recv(65536)
            if not data:
                break
            reply += data
    assert reply.startswith(b"HTTP/1.1 413 ") and b"request body of 50000000 bytes" in reply
