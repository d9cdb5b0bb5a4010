"""What the serving benchmarks (fuzz_serve.py, load_test.py, soak_serve.py) share: `attnkit serve` started
on a free 127.0.0.1 port, waited for until /healthz answers and stopped when the benchmark is done; and
their result lines, printed and appended to a results file."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

START_SECONDS = 180  # how long a server may take to answer /healthz (loading models on a busy machine)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(arguments: list[str], port: int) -> subprocess.Popen:
    """`attnkit serve ARGUMENTS --port PORT`, once it answers /healthz; exits the benchmark with the
    server's error output if it stops first or does not answer within `START_SECONDS`."""
    command = [sys.executable, "-m", "attnkit", "serve", *arguments, "--port", str(port)]
    server = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + START_SECONDS
    while time.monotonic() < deadline:
        if server.poll() is not None:
            sys.exit(f"attnkit serve exited: {server.stderr.read().strip()}")
        try:
            if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1).status_code == 200:
                return server
        except httpx.HTTPError:
            time.sleep(0.2)
    server.kill()
    sys.exit(f"attnkit serve did not answer /healthz within {START_SECONDS} s")


@contextmanager
def serving(arguments: list[str]) -> Iterator[tuple[str, subprocess.Popen]]:
    """The URL and process of `attnkit serve ARGUMENTS` on a free port, terminated on leaving."""
    port = free_port()
    server = start_server(arguments, port)
    try:
        yield f"http://127.0.0.1:{port}", server
    finally:
        server.terminate()
        server.wait(timeout=30)


def alive(url: str) -> bool:
    """Whether the server at `url` still answers /healthz with status ok."""
    try:
        return httpx.get(f"{url}/healthz", timeout=10).json().get("status") == "ok"
    except (httpx.HTTPError, ValueError):
        return False


def record(result: dict, results: Path, save: bool = True) -> None:
    """Print `result` as one JSON line and, if `save`, append it to `results`."""
    line = json.dumps(result)
    print(line, flush=True)
    if save:
        results.parent.mkdir(parents=True, exist_ok=True)
        with open(results, "a", encoding="utf-8") as f:
            f.write(line + "\n")
