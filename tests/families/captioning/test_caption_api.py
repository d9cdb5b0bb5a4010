"""`POST /v1/caption` and the caption page of `attnkit serve`, over the shapes captioner: the JSON
API (captions, attention, n-best, clear 422s for bad images) and, in headless Chromium, the page
(upload an image, get the caption, hover a word to draw its attention overlay)."""

from __future__ import annotations

import base64
import socket
import threading
import time
from pathlib import Path

import pytest
import uvicorn
from fastapi.testclient import TestClient

from attnkit.families import load_run
from attnkit.serve.app import Batching, Limits, create_app

pytestmark = pytest.mark.slow  # docs/conventions.md, Tests

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking", "--disable-sync"]


@pytest.fixture(scope="module")
def app(shapes_run):
    root, _ = shapes_run
    return create_app({"shapes": load_run(root / "run")}, Limits(max_texts=8, max_chars=1000), Batching(window_ms=50, max_batch=8))


def b64(path: Path) -> str:
    return base64.b64encode(path.read_bytes()).decode()


def test_caption_endpoint(app, shapes_run):
    root, scenes = shapes_run
    images = [root / "data" / "images_valid" / f"valid{i:05d}.png" for i in range(2)]
    client = TestClient(app)
    body = {"texts": ["a.png", "b.png"], "images": [b64(p) for p in images], "attention": True, "beam": 3, "nbest": 2}
    response = client.post("/v1/caption", json=body)
    assert response.status_code == 200, response.text
    results = response.json()["results"]
    assert [r["name"] for r in results] == ["a.png", "b.png"]
    assert results[0]["caption"] == scenes[0].caption and len(results[0]["nbest"]) == 2
    assert len(results[0]["attention"]) == len(results[0]["words"]) and len(results[0]["attention"][0]) == results[0]["grid"] ** 2
    assert "captioning" in {m["task"] for m in client.get("/v1/models").json()}
    assert client.get("/caption").status_code == 200


@pytest.mark.parametrize("images, message", [(["@@@"], "not base64"), ([base64.b64encode(b"hello").decode()], "not an image"), ([], "0 images for 1 names")])
def test_bad_images_are_422(app, images, message):
    response = TestClient(app).post("/v1/caption", json={"texts": ["x.png"], "images": images})
    assert response.status_code == 422 and message in response.json()["detail"]


def test_caption_page_in_a_browser(app, shapes_run, tmp_path):
    if not Path(CHROMIUM).is_file():
        pytest.skip(f"{CHROMIUM} is absent")
    sync_api = pytest.importorskip("playwright.sync_api")
    root, scenes = shapes_run
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.02)
    try:
        with sync_api.sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
            page = browser.new_page()
            errors: list[str] = []
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.goto(f"http://127.0.0.1:{port}/caption")
            page.set_input_files("#file", str(root / "data" / "images_valid" / "valid00000.png"))
            page.wait_for_selector(".cap-word")
            words = page.locator(".cap-word")
            assert " ".join(words.all_inner_texts()).replace(" </s>", "") == scenes[0].caption
            dark = "() => { const c = document.querySelector('.cap-view canvas'); const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data; let s = 0; for (let i = 3; i < d.length; i += 4) s += d[i]; return s; }"
            assert page.evaluate(dark) == 0
            words.nth(1).hover()
            assert page.evaluate(dark) > 0 and "on" in (words.nth(1).get_attribute("class") or "")
            page.screenshot(path=str(tmp_path / "caption.png"))
            assert not errors, errors
            browser.close()
    finally:
        server.should_exit = True
        thread.join(timeout=10)
