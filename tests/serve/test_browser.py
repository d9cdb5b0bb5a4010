"""End to end in headless Chromium (Debian's `chromium`, driven by Playwright): translate on the web
page, switch layer and head, hover tokens and watch the highlights; a screenshot is kept.

The screenshot goes to the test's tmp folder and, if ATTNKIT_ARTIFACTS is set, into that folder.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # docs/conventions.md, Tests

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
        "--disable-component-update", "--disable-sync"]  # fmt: skip

if not Path(CHROMIUM).is_file():
    pytest.skip(f"{CHROMIUM} is absent (apt-get install chromium; .ci/run installs it)", allow_module_level=True)
sync_api = pytest.importorskip("playwright.sync_api", reason="the playwright package is not installed (pip install -e .[dev])")


@pytest.fixture(scope="module")
def page(live_server):
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        page = browser.new_page(viewport={"width": 1200, "height": 900})
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.errors = errors
        yield page
        browser.close()


def weights(locator) -> list[str]:
    return [span.get_attribute("data-weight") or "" for span in locator.all()]


def canvas_pixels(locator) -> list[int]:
    """The RGB values of a canvas, as a list (to compare two drawings, or count the inked pixels)."""
    return locator.evaluate("c => Array.from(c.getContext('2d').getImageData(0, 0, c.width, c.height).data).filter((_, i) => i % 4 < 3)")


def inked(locator) -> int:
    """How many pixels of a canvas are not white."""
    return locator.evaluate("c => { const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data; let n = 0;"
                            " for (let i = 0; i < d.length; i += 4) if (d[i] + d[i + 1] + d[i + 2] < 750) n++; return n; }")  # fmt: skip


def test_translate_switch_layer_head_and_hover(page, live_server, tmp_path):
    page.goto(live_server.url + "/")
    page.wait_for_selector("#model option[value=tiny]", state="attached")
    assert page.input_value("#beam") == "3"  # the run's decode.beam
    page.fill("#text", "t1 t2 t3 t4")
    page.click("#submit")
    card = page.locator(".attn-card")
    card.wait_for()
    expected = live_server.app.state.models["tiny"]
    assert page.locator("#status").inner_text() == "1 done by tiny"
    assert card.locator(".attn-source").inner_text() == "t1 t2 t3 t4"
    output = card.locator(".attn-output").inner_text()
    assert output and set(output.split()) <= {f"t{i}" for i in range(10)}
    assert card.locator(".attn-nbest li").count() == expected.loaded.run.decode.beam

    # The encoder-decoder view: rows = output pieces (+ </s>), columns = source pieces + </s>.
    keys, queries, heatmap = card.locator(".attn-keys .attn-token"), card.locator(".attn-queries .attn-token"), card.locator(".attn-heatmap canvas.attn-canvas")
    assert [k.inner_text() for k in keys.all()] == ["t1", "t2", "t3", "t4", "</s>"]
    assert page.locator(".attn-layer option").count() == 2 and page.locator(".attn-head option").count() == 3  # mean, head 1, head 2
    assert page.input_value(".attn-layer") == "1"  # the view opens on the last layer
    legend = card.locator(".attn-legend").inner_text().split()
    assert legend[:2] == ["weight", "0"] and 0 < float(legend[2]) <= 1  # 0 to the map's largest weight
    mean_layer2 = canvas_pixels(heatmap)
    page.select_option(".attn-layer", "0")
    layer1 = canvas_pixels(heatmap)
    page.select_option(".attn-head", "1")
    layer1_head2 = canvas_pixels(heatmap)
    assert inked(heatmap) > 0 and mean_layer2 != layer1 != layer1_head2

    # Hover an output token: the source tokens are shaded by its attention row; another row differs.
    assert set(weights(keys)) == {""}
    queries.nth(0).hover()
    first = weights(keys)
    assert all(first) and abs(sum(map(float, first)) - 1) < 2e-3  # a row of weights sums to 1
    assert "attn-active" in queries.nth(0).get_attribute("class")
    queries.nth(1).hover()
    assert weights(keys) != first
    # ... and the reverse: hovering a source token shades the output tokens by its column.
    keys.nth(0).hover()
    assert all(weights(queries)) and set(weights(keys)) == {""}

    # Other kinds of attention: encoder self-attention is source x source.
    page.select_option(".attn-kind", "encoder")
    assert [q.inner_text() for q in queries.all()] == ["t1", "t2", "t3", "t4", "</s>"]
    page.select_option(".attn-kind", "cross")
    queries.nth(0).hover()

    screenshot(page, tmp_path / "translate-page.png")
    assert page.errors == []


def test_classify_page_shades_words_per_hop(page, live_server, tmp_path):
    page.goto(live_server.url + "/classify")
    page.wait_for_selector("#model option[value=sase]", state="attached")
    page.fill("#text", "t1 t2 t3 t4")
    page.click("#submit")
    card = page.locator(".attn-card")
    card.wait_for()
    assert card.locator(".attn-output").inner_text() in {"neg", "pos"} and card.locator(".attn-probs li").count() == 2
    words = card.locator(".attn-hop-words .attn-token")  # the hop strip (the shared views below the card have strips of their own)
    assert [w.inner_text() for w in words.all()] == ["t1", "t2", "t3", "t4"]
    mean = weights(words)
    assert max(map(float, mean)) == 1.0  # shading is relative to the most attended word
    page.select_option(".attn-hop", "1")
    assert weights(words) != mean
    screenshot(page, tmp_path / "classify-page.png")
    assert page.errors == []


def screenshot(page, path: Path) -> None:
    """Save a full-page screenshot as a test artifact (also into $ATTNKIT_ARTIFACTS when set)."""
    page.screenshot(path=str(path), full_page=True)
    assert path.stat().st_size > 10_000
    if os.environ.get("ATTNKIT_ARTIFACTS"):
        Path(os.environ["ATTNKIT_ARTIFACTS"]).mkdir(parents=True, exist_ok=True)
        shutil.copy(path, Path(os.environ["ATTNKIT_ARTIFACTS"]) / path.name)


def test_error_message_on_the_page(page, live_server):
    page.goto(live_server.url + "/")
    page.wait_for_selector("#model option[value=tiny]", state="attached")
    page.fill("#text", "t1 " * 100)
    page.click("#submit")
    page.wait_for_function("document.getElementById('status').textContent.startsWith('error')")
    assert page.locator("#status").inner_text() == "error 413: texts[0]: 299 characters, at most 200 per text"


def test_report_draws_a_parse_tree(page, tmp_path):
    """`attnkit report` of a parser: the record's SVG drawing loads as an image beside the bracketed tree."""
    from attnkit.families.parsing import FAMILY
    from attnkit.families.parsing.draw import tree_svg
    from attnkit.families.parsing.trees import parse_trees
    from attnkit.viz.report import write_report

    tree = parse_trees("(S (NP (DT The) (NN dog)) (VP (VBZ barks)) (. <b>))")[0]
    record = {"id": 0, "source": "The dog barks <b>", "text": str(tree), "svg": tree_svg(tree), "src": [], "tgt": [], "attention": None,
              "nbest": [{"text": str(tree), "score": -1.0, "finished": True}]}  # fmt: skip
    path = write_report([record], tmp_path / "parse.html", renderer=FAMILY.api.renderer_script())
    errors_before = len(page.errors)
    page.goto(path.as_uri())
    image = page.locator(".attn-card .attn-tree img")
    image.wait_for()
    size = image.evaluate("img => img.decode().then(() => [img.naturalWidth, img.naturalHeight])")
    assert page.locator(".attn-output").inner_text() == str(tree)
    page.screenshot(path=str(tmp_path / "parse-report.png"), full_page=True)
    assert size[0] > 100 and size[1] > 50  # the picture decoded (an unescaped "<b>" would break it)
    assert page.errors[errors_before:] == []


def test_explorer_and_report_draw_a_runs_training_curves(page, serve_app, tiny_trained_run, tiny_transformer_run, tmp_path):
    """The attention page draws the picked run's curves (GET /v1/models/{name}/metrics), against updates or
    minutes; a run without metrics gets the server's note; the report draws the same charts offline."""
    from attnkit.cli import main
    from attnkit.families import load_run
    from attnkit.serve.app import create_app

    server = serve_app(create_app({"toy": load_run(tiny_trained_run), "tiny": load_run(tiny_transformer_run)}))
    tab = page.context.browser.new_page(viewport={"width": 1200, "height": 900})  # its own: the report's cards log apart from the shared page
    errors: list[str] = []
    tab.on("pageerror", lambda e: errors.append(str(e)))
    tab.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    try:
        tab.goto(server.url + "/attention")
        tab.wait_for_selector("#curves svg.attn-curve polyline")
        charts = tab.locator("#curves svg.attn-curve")
        assert [c.get_attribute("aria-label") for c in charts.all()] == ["loss against updates", "learning rate against updates", "BLEU against updates"]
        lines = tab.locator("#curves polyline")
        assert lines.count() == 4  # train and valid loss, learning rate, BLEU
        before = lines.first.get_attribute("points")
        assert lines.first.bounding_box()["width"] > 200  # the first to the last update spans the chart
        tab.select_option(".attn-curves-x", "minutes")
        assert charts.first.get_attribute("aria-label") == "loss against minutes" and lines.first.get_attribute("points") != before
        screenshot(tab, tmp_path / "explorer-curves.png")
        tab.select_option("#model", "tiny")
        tab.wait_for_selector("#curves p.attn-curves-source")
        assert tab.locator("#curves").inner_text() == f"training curves: {tiny_transformer_run / 'metrics.jsonl'}: no metrics yet"
        assert errors == []

        report = tmp_path / "report.html"
        assert main(["report", str(tiny_trained_run), "t1 t2 t3", "--out", str(report), "--beam", "1"]) == 0
        tab.goto(report.as_uri())
        tab.wait_for_selector("#curves svg.attn-curve polyline")
        assert tab.locator("#curves svg.attn-curve").count() == 3 and tab.locator("#curves polyline").count() == 4
    finally:
        tab.close()
