"""A live server (uvicorn in a thread, on a free 127.0.0.1 port) over the tiny runs of tests/conftest.py."""

from __future__ import annotations

import socket
import threading
import time

import pytest
import uvicorn

from attnkit.families import load_run
from attnkit.serve.app import Batching, Limits, create_app


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class LiveServer:
    """Serve `app` until `stop()`; `url` is its base address."""

    def __init__(self, app) -> None:
        port = free_port()
        self.app, self.url = app, f"http://127.0.0.1:{port}"
        self.server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
        self.thread = threading.Thread(target=self.server.run, daemon=True)
        self.thread.start()
        deadline = time.monotonic() + 20
        while not self.server.started:
            assert time.monotonic() < deadline and self.thread.is_alive(), "the test server did not start"
            time.sleep(0.02)

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)


@pytest.fixture
def serve_app():
    """Start a `LiveServer` for an app: `serve_app(app)`; every server started is stopped after the test."""
    servers: list[LiveServer] = []
    yield lambda app: servers.append(LiveServer(app)) or servers[-1]
    for server in servers:
        server.stop()


@pytest.fixture(scope="module")
def live_server(tiny_transformer_run, tiny_sase_run):
    """The tiny Transformer as `tiny` (first) and the tiny classifier as `sase`, batching requests
    that arrive within 300 ms (up to 16 texts)."""
    models = {"tiny": load_run(tiny_transformer_run), "sase": load_run(tiny_sase_run)}
    app = create_app(models, Limits(max_texts=16, max_chars=200), Batching(window_ms=300, max_batch=16))
    server = LiveServer(app)
    yield server
    server.stop()
