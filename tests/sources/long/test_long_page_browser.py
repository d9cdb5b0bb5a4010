"""The long-input page in headless Chromium (Debian's `chromium`, driven by Playwright): a tiny random Llama (2 layers,
hidden 32, 2 query heads on 1 key/value head, 32,768 positions) reads a 32,768-token document through `attnkit serve`;
the overview is drawn from the coarsest pooled level beside the summaries' grids, clicks zoom through the finer levels
(fetched from the server) to an exact tile with the tokens on its axes, and the tile's values equal transformers'
eager attention on the document's first tokens (a causal row sees no later token), with the sink and without it."""

from __future__ import annotations

import json
import random

import pytest
import torch
from hf_tiny import VOCAB, tokenizer, transformers
from test_long_serve import _without_sink
from test_page_browser import ARGS, CHROMIUM, served, sync_api

from attnkit.serve.app import create_app, load_hf

pytestmark = pytest.mark.slow  # docs/conventions.md, Tests

N = 32_768
WORDS = ["the", "a", "dog", "sat", "on", "mat", "ran", "and", "hello", "world", ".", ","]  # one token each
SPAN = 32  # tiles a side of a zoomed view (AttnLong.SPAN)
AT = 1300  # the zoom goes to the cells holding query and key AT, down to the exact tile around it


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    config = transformers.LlamaConfig(vocab_size=len(VOCAB), pad_token_id=0, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                                      num_key_value_heads=1, head_dim=16, intermediate_size=64, max_position_embeddings=N, initializer_range=0.25)  # fmt: skip
    torch.manual_seed(0)
    path = tmp_path_factory.mktemp("hf") / "llama32k"
    transformers.LlamaForCausalLM(config).save_pretrained(path, safe_serialization=True)
    tokenizer("plain").save_pretrained(path)
    return path


def _eager(folder, ids: list[int]) -> list[torch.Tensor]:
    """transformers' eager attention of the first tokens: per layer (H, n, n)."""
    model = transformers.LlamaForCausalLM.from_pretrained(folder, attn_implementation="eager").eval()
    with torch.inference_mode():
        return [a[0] for a in model(input_ids=torch.tensor([ids]), output_attentions=True).attentions]


def _click(page, at: int) -> None:
    """Click the map's cell holding query and key `at` (through the overlay canvas, wherever it is scrolled)."""
    d = page.locator(".attn-long-map").evaluate("m => Object.fromEntries(Object.entries(m.dataset).map(([k, v]) => [k, isNaN(v) ? v : Number(v)]))")
    level = int(d["level"])
    i, j = at // level - d["q0"] // level, at // level - d["k0"] // level
    x, y = d["left"] + (j + 0.5) * d["cell"], d["top"] + (i + 0.5) * d["cell"]
    page.locator(".attn-long-map canvas.attn-overlay").evaluate(
        "(c, [x, y]) => { const r = c.getBoundingClientRect(); for (const type of ['mousemove', 'click'])"
        " c.dispatchEvent(new MouseEvent(type, {clientX: r.left + x, clientY: r.top + y, bubbles: true})); }",
        [x, y],
    )


def _tile(page, at: int) -> dict:
    """Click at `at` and return the POST /v1/long/tile it made (request and answer)."""
    with page.expect_response(lambda r: r.url.endswith("/v1/long/tile"), timeout=60_000) as answer:
        _click(page, at)
    return {"request": json.loads(answer.value.request.post_data), **answer.value.json()}


def test_overview_zoom_and_exact_tile(folder, tmp_path):
    rng = random.Random(0)
    text = " ".join(rng.choice(WORDS) for _ in range(N))
    ids = tokenizer("plain")(text)["input_ids"]
    assert len(ids) == N
    with served(create_app({}, hf=load_hf([str(folder)]))) as url, sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.goto(url + "/long")
        page.wait_for_selector("#model option[value=llama32k]", state="attached")
        assert "--long-cache" in page.locator("#keeps").inner_text()
        page.locator("#document").fill(text)
        page.click("#submit")
        page.wait_for_selector(".attn-long-map canvas.attn-canvas", timeout=600_000)
        assert page.locator("#status").inner_text() == f"{N:,} tokens read by llama32k"

        # The overview: the coarsest level, 32 x 32 tiles of 1,024 tokens, beside the four grids of 2 layers x 2 heads.
        map_ = page.locator(".attn-long-map")
        assert (map_.get_attribute("data-level"), map_.get_attribute("data-rows")) == ("1024", str(-(-N // 1024)))
        assert page.locator(".attn-long-map canvas.attn-canvas").evaluate(INKED) > 1000
        assert page.locator(".attn-long-grid").count() == 4 and page.locator(".attn-long-cell").count() == 4 * 2 * 2
        assert page.input_value(".attn-long-layer") == "1" and page.input_value(".attn-long-head") == "mean"

        # Zoom: level 256 and level 64 come from the server, then the exact tile of the 64 tokens around AT.
        for level in (256, 64):
            tile = _tile(page, AT)
            assert tile["request"]["level"] == level and len(tile["values"]) == min(SPAN, -(-N // level))
            page.wait_for_function(f"document.querySelector('.attn-long-map').dataset.level === '{level}'")
        exact = _tile(page, AT)
        q0 = AT // 64 * 64
        assert {k: exact["request"][k] for k in ("layer", "head", "level", "q0", "q1", "k0", "k1", "sink")} == {
            "layer": 2, "head": None, "level": 1, "q0": q0, "q1": q0 + 64, "k0": q0, "k1": q0 + 64, "sink": True}  # fmt: skip
        page.wait_for_function("document.querySelector('.attn-long-map').dataset.level === '1'")
        assert int(map_.get_attribute("data-cell")) >= 10  # cells big enough for the tokens on the axes
        reference = _eager(folder, ids[: q0 + 64])[1]  # (H, n, n): layer 2
        want = reference.mean(0)[q0:, q0:]
        torch.testing.assert_close(torch.tensor(exact["values"]), want, atol=1e-5, rtol=0)

        # The hover names the tokens and the weight; the sink-aware toggle fetches the tile renormalised without the first token.
        _click(page, q0 + 5)
        hover = page.locator(".attn-long .attn-hover").inner_text()
        token = tokenizer("plain").convert_ids_to_tokens([ids[q0 + 5]])[0]
        assert hover == f"{token} (6) \u2192 {token} (6): {want[5, 5].item():.4f}"
        with page.expect_response(lambda r: r.url.endswith("/v1/long/tile")) as answer:
            page.locator(".attn-long-sink").check()
        torch.testing.assert_close(torch.tensor(answer.value.json()["values"]), _without_sink(reference).mean(0)[q0:, q0:], atol=1e-5, rtol=0)
        page.screenshot(path=str(tmp_path / "long-page.png"), full_page=True)
        browser.close()
    assert errors == []


INKED = """c => { const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data; let n = 0;
  for (let i = 0; i < d.length; i += 4) if (d[i] + d[i + 1] + d[i + 2] < 750) n++; return n; }"""


def test_offline_report_zooms_to_the_chosen_rows(hf_folder, tmp_path):
    """`report --document --long` with no server: the overview, then, past the finest level it holds, the exact rows of --rows."""
    from attnkit.cli import main

    doc = tmp_path / "doc.txt"
    doc.write_text(" ".join(WORDS * 2), encoding="utf-8")  # 24 tokens: one tile of 64
    out = tmp_path / "long.html"
    assert main(["report", str(hf_folder("llama")), "--document", str(doc), "--long", "--rows", "3", "-1", "--out", str(out)]) == 0
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        page = browser.new_page(viewport={"width": 1200, "height": 900})
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto(out.as_uri())
        page.wait_for_selector(".attn-long-map canvas.attn-canvas")
        map_ = page.locator(".attn-long-map")
        assert (map_.get_attribute("data-level"), map_.get_attribute("data-rows")) == ("64", "1")
        _click(page, 0)
        page.wait_for_function("document.querySelector('.attn-long-map').dataset.level === 'rows'")
        assert (map_.get_attribute("data-rows"), map_.get_attribute("data-cols")) == ("2", "24")
        assert page.locator(".attn-long-where").inner_text() == "the exact rows chosen with --rows (3, 23) over keys 0\u201323"
        browser.close()
    assert errors == []
