"""A report card whose output is empty (a map with no query rows, or no keys) in headless Chromium:
every view draws the empty-state message, the page throws nothing, and the SVG export holds the
message too (attention-views.js once built a zero-height ImageData and threw)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from attnkit.viz.report import write_report

pytestmark = pytest.mark.slow  # docs/conventions.md, Tests

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking"]
if not Path(CHROMIUM).is_file():
    pytest.skip(f"{CHROMIUM} is absent (apt-get install chromium; .ci/run installs it)", allow_module_level=True)
sync_api = pytest.importorskip("playwright.sync_api", reason="the playwright package is not installed (pip install -e .[dev])")

INKED = """c => { const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data; let n = 0;
  for (let i = 0; i < d.length; i += 4) if (d[i] + d[i + 1] + d[i + 2] < 750) n++; return n; }"""
EMPTY = {
    "output": ({"rows": [], "cols": ["a", "dog", "</s>"], "layers": [[[]]]}, "no attention to show: the output is empty"),
    "input": ({"rows": ["x", "</s>"], "cols": [], "layers": [[[[], []]]]}, "no attention to show: the input is empty"),
}


@pytest.mark.parametrize("empty", sorted(EMPTY))
def test_an_empty_map_draws_a_message_in_every_view(tmp_path: Path, empty: str) -> None:
    maps, message = EMPTY[empty]
    path = write_report([{"source": "a dog", "text": "", "maps": {"cross": maps}}], tmp_path / "r.html")
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        page, errors = browser.new_page(), []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto(path.resolve().as_uri())
        for view in ("heatmap", "head", "model"):
            page.select_option(".attn-view-pick", view)
            assert page.locator(".attn-canvas").evaluate(INKED) > 0, view  # the message's text
        svg = page.evaluate(f"AttnDraw.svg(AttnDraw.heatmap(AttnDraw.source({json.dumps(maps)}), new Float32Array(0)))")
        browser.close()
    assert errors == []
    assert message in svg
