"""The explorer's views in headless Chromium (Debian's `chromium`, driven by Playwright) on tiny Hugging
Face models: the report page of a BERT and a Marian model (head view and model view draw, a
thumbnail opens its heatmap, PNG and SVG export), the served /attention page, and a 2,048-token
input (time to the first view and the page's size, printed and recorded in docs/explorer.md).
"""

from __future__ import annotations

import threading
import time
from contextlib import contextmanager
from pathlib import Path

import pytest
from hf_tiny import TEXT, VOCAB, tokenizer, transformers

from attnkit.sources import AttentionOptions, open_source
from attnkit.sources.page import page_record
from attnkit.viz.report import write_report

pytestmark = pytest.mark.slow  # docs/conventions.md, Tests

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking"]
if not Path(CHROMIUM).is_file():
    pytest.skip(f"{CHROMIUM} is absent (apt-get install chromium; .ci/run installs it)", allow_module_level=True)


@contextmanager
def served(app):
    """The app served by uvicorn in a thread on a free 127.0.0.1 port: yields its base URL, stops after the block."""
    import uvicorn

    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{server.servers[0].sockets[0].getsockname()[1]}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)


sync_api = pytest.importorskip("playwright.sync_api", reason="the playwright package is not installed (pip install -e .[dev])")

INKED = """c => { const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data; let n = 0;
  for (let i = 0; i < d.length; i += 4) if (d[i] + d[i + 1] + d[i + 2] < 750) n++; return n; }"""


@pytest.fixture(scope="module")
def browser():
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield browser
        browser.close()


@pytest.fixture
def page(browser):
    page = browser.new_page(viewport={"width": 1200, "height": 900}, accept_downloads=True)
    page.errors = []
    page.on("pageerror", lambda e: page.errors.append(str(e)))
    page.on("console", lambda m: page.errors.append(m.text) if m.type == "error" else None)
    yield page
    page.close()


def pick_view(page, view: str) -> None:
    page.select_option(".attn-view-pick", view)


def inked(page, selector: str) -> int:
    return page.locator(selector).evaluate(INKED)


@pytest.mark.parametrize(("name", "kinds"), [("bert", ["encoder", "rollout"]), ("marian", ["cross", "encoder", "decoder_self", "rollout", "rollout_encoder"])])
def test_head_view_model_view_and_export(page, hf_folder, tmp_path, name, kinds):
    path = write_report([page_record(open_source(str(hf_folder(name))), TEXT)], tmp_path / f"{name}.html", title=name)
    page.goto(path.as_uri())
    page.wait_for_selector(".attn-heatmap canvas.attn-canvas")
    assert page.locator(".attn-kind option").evaluate_all("os => os.map(o => o.value)") == kinds
    assert inked(page, ".attn-heatmap canvas.attn-canvas") > 100
    pick_view(page, "head")
    assert page.locator(".attn-head option").first.inner_text() == "all heads"
    assert inked(page, ".attn-headview canvas.attn-canvas") > 500  # labels and lines
    page.locator(".attn-headview .attn-overlay").hover(position={"x": 100, "y": 30})  # the first query token
    assert page.locator(".attn-hover").inner_text().startswith("query 1: ")
    assert inked(page, ".attn-headview canvas.attn-overlay") > 0  # its lines, marked
    with page.expect_download() as download:
        page.click(".attn-png")
    png = Path(download.value.path()).read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and download.value.suggested_filename.endswith("-head-layer2-all.png")
    with page.expect_download() as download:
        page.click(".attn-svg")
    assert Path(download.value.path()).read_text().startswith("<svg") and "<path" in Path(download.value.path()).read_text()

    pick_view(page, "model")
    assert inked(page, ".attn-modelview canvas.attn-canvas") > 8 * 24 * 24  # 2 layers x 4 heads of thumbnails
    page.locator(".attn-modelview .attn-overlay").click(position={"x": 52 + 1 * 86 + 10, "y": 18 + 10})  # layer 1, head 2
    page.wait_for_selector(".attn-heatmap canvas.attn-canvas")
    assert page.input_value(".attn-view-pick") == "heatmap" and page.input_value(".attn-layer") == "0" and page.input_value(".attn-head") == "1"
    page.screenshot(path=str(tmp_path / f"{name}.png"), full_page=True)
    assert page.errors == []


def test_the_served_attention_page(page, hf_folder):
    from attnkit.serve.app import Limits, create_app, load_hf

    app = create_app({}, Limits(max_chars=200), hf=load_hf([str(hf_folder("marian"))]))
    with served(app) as url:
        page.goto(f"{url}/attention")
        page.wait_for_selector("#model option[value=marian]", state="attached")
        page.fill("#text", TEXT)
        page.fill("#target", "the dog sat .")
        page.click("#submit")
        page.wait_for_selector(".attn-card .attn-heatmap canvas")
        assert page.locator("#status").inner_text() == "done by marian"
        pick_view(page, "head")
        assert inked(page, ".attn-headview canvas.attn-canvas") > 500
        page.fill("#target", "a dog .")
        page.check("#attr-ig")
        page.click("#submit")
        page.wait_for_selector(".attn-card .attn-tau")
        assert page.locator(".attn-attr-title").inner_text().startswith("attributions of output 0 'a'")
        page.fill("#text", "x " * 150)
        page.click("#submit")
        page.wait_for_function("document.getElementById('status').textContent.startsWith('error')")
        assert page.locator("#status").inner_text() == "error 413: text: 299 characters, at most 200"  # (trimmed)
    assert [e for e in page.errors if "status of 413" not in e] == []  # the refused request is logged by the browser


def test_the_attribution_view_and_tau_table(page, hf_folder, tmp_path):
    pytest.importorskip("captum")
    record = page_record(open_source(str(hf_folder("bert"))), TEXT, AttentionOptions(attribute=("ixg", "ig"), flow=True))
    path = write_report([record], tmp_path / "attr.html", title="attributions")
    page.goto(path.as_uri())
    page.wait_for_selector(".attn-attribution .attn-tau")
    assert page.locator("tr.attn-attr-method").count() == 2 and page.locator("tr.attn-attr-compared").count() == 4
    shades = page.locator(".attn-attr-rows .attn-cell").evaluate_all("cs => cs.map(c => getComputedStyle(c).backgroundColor)")
    n = len(record["attribution"]["tokens"])
    assert len(shades) == 6 * n and len(set(shades)) > 2  # each row shaded by |value| on its own scale
    ig = [abs(x) for x in record["attribution"]["scores"]["ig"]]
    assert shades[n + ig.index(max(ig))] == "rgb(31, 90, 200)"  # the IG row's largest |value|: deep blue
    tau = record["attribution"]["tau"]
    expected = [t for k in range(4) for t in (tau["ixg"][k], tau["ig"][k])]  # a row per compared name, a column per method
    shown = page.locator(".attn-tau-value").all_inner_texts()
    assert len(shown) == len(expected)
    for text, t in zip(shown, expected, strict=True):
        assert text == "\u2014" if t is None else abs(float(text) - t) <= 5e-4
    assert page.errors == []


def test_a_sentence_classifier_on_the_report_and_the_served_page(page, tiny_sase_run, tmp_path):
    """An attnkit classifier: the report's card (its renderer) adds the shared views of the hops; the served
    /attention page shows the class and probabilities as the note, the hops, and the attributions of the class
    beside the hops' mean."""
    pytest.importorskip("captum")
    from attnkit.cli import main
    from attnkit.families import load_run
    from attnkit.serve.app import create_app

    report = tmp_path / "sase.html"
    assert main(["report", str(tiny_sase_run), "T1 t2 t3 t4", "--out", str(report)]) == 0
    page.goto(report.as_uri())
    page.wait_for_selector(".attn-card .attn-heatmap canvas.attn-canvas")
    assert page.locator(".attn-probs li").count() == 2 and page.locator(".attn-hop option").count() == 3  # mean, hop 1, hop 2
    assert page.locator(".attn-kind option").evaluate_all("os => os.map(o => o.value)") == ["hops"]
    assert page.locator(".attn-queries .attn-token").all_inner_texts() == ["hop 1", "hop 2"]
    pick_view(page, "head")
    assert inked(page, ".attn-headview canvas.attn-canvas") > 200
    pick_view(page, "model")
    assert inked(page, ".attn-modelview canvas.attn-canvas") > 100
    assert page.errors == []

    with served(create_app({"sase": load_run(tiny_sase_run)})) as url:
        page.goto(f"{url}/attention")
        page.wait_for_selector("#model option[value=sase]", state="attached")
        page.fill("#text", "T1 t2 t3 t4")
        page.check("#attr-ig")
        page.click("#submit")
        page.wait_for_selector(".attn-card .attn-tau")
        note = page.locator(".attn-note").inner_text()
        assert note.split(",")[0] in {"neg", "pos"} and ", p = 0." in note and page.locator(".attn-output").inner_text() == note.split(",")[0]
        assert page.locator(".attn-attr-title").inner_text().startswith("attributions of class ")
        assert page.locator(".attn-tau td").first.inner_text() == "attention hops, layer 1 (mean over heads and queries)"
        assert page.errors == []


def long_model(folder: Path, positions: int = 2048) -> Path:
    """A tiny-width BERT (2 layers x 2 heads, width 16) that takes `positions` tokens."""
    config = transformers.BertConfig(vocab_size=len(VOCAB), pad_token_id=0, hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
                                     intermediate_size=32, max_position_embeddings=positions)  # fmt: skip
    transformers.BertModel(config).save_pretrained(folder, safe_serialization=True)
    tokenizer("bert").save_pretrained(folder)
    return folder


def test_a_2048_token_input_opens_and_every_view_draws(page, tmp_path):
    """A 2,048-token input builds, opens and switches views with no script error (its speed is
    benchmarks/explorer_vs_bertviz.py's to measure, not a test's)."""
    words = ["the", "dog", "sat", "on", "a", "mat", ".", "and", "ran"]
    text = " ".join(words[i % len(words)] for i in range(2046))  # + [CLS] and [SEP]: 2,048 tokens
    record = page_record(open_source(str(long_model(tmp_path / "long"))), text)
    assert len(record["maps"]["encoder"]["rows"]) == 2048
    path = write_report([record], tmp_path / "long.html", title="2,048 tokens")
    page.goto(path.as_uri())
    page.wait_for_selector(".attn-heatmap canvas.attn-canvas")
    assert inked(page, ".attn-heatmap canvas.attn-canvas") > 2048 * 100
    for view in ("head", "model", "heatmap"):
        page.evaluate("v => { const s = document.querySelector('.attn-view-pick'); s.value = v; s.dispatchEvent(new Event('change')); }", view)
    assert inked(page, ".attn-heatmap canvas.attn-canvas") > 2048 * 100
    page.evaluate("""() => { const o = document.querySelector('.attn-overlay'), r = o.getBoundingClientRect();
        o.dispatchEvent(new MouseEvent('mousemove', {clientX: r.left + 300, clientY: r.top + 300})); }""")
    assert page.errors == []
