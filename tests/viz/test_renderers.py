"""The report's scripts in Node with a minimal DOM (`dom_stub.js`; the headless-browser tests in
tests/serve/test_browser.py need Chromium): each family's records drawn by the core's attention.js
and the family's renderer (`Api.renderer`), as `attnkit report` inlines them."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from attnkit.families import FAMILIES
from attnkit.viz.report import embed_json, shared_script

NODE = shutil.which("node")
pytestmark = pytest.mark.skipif(NODE is None, reason="node is absent")
STUB = (Path(__file__).parent / "dom_stub.js").read_text(encoding="utf-8")
MAPS = {"cross": {"rows": ["x", "</s>"], "cols": ["a", "</s>"], "layers": [[[[0.9, 0.1], [0.2, 0.8]]]]}}
NBEST = [{"text": "x", "score": -0.5, "finished": True}]
RECORDS = {
    "translation": {"source": "a", "text": "x", "nbest": NBEST, "maps": MAPS},
    "classification": {"source": "a b", "text": "pos", "probs": {"pos": 0.7, "neg": 0.3},
                       "maps": {"hops": {"title": "attention hops", "rows": ["hop 1"], "cols": ["a", "b"], "layers": [[[[0.25, 0.75]]]]}}},
    "parsing": {"source": "a", "text": "(S (NN a))", "nbest": NBEST, "svg": "<svg xmlns='http://www.w3.org/2000/svg'></svg>"},
    "captioning": {"source": "i.png", "text": "a dog", "nbest": NBEST, "image": "data:image/jpeg;base64,AAAA",
                   "overlays": [{"word": "a", "src": "data:image/jpeg;base64,BBBB"}, {"word": "dog", "src": "data:image/jpeg;base64,CCCC"}]},
}  # fmt: skip
EXPECTED = {  # what each family's card shows besides its text
    "translation": {"attn-nbest", "attn-heatmap", "attn-kind"},
    "classification": {"attn-probs", "attn-bar", "attn-hop", "attn-keys"},
    "parsing": {"attn-nbest", "attn-tree"},
    "captioning": {"attn-nbest", "attn-overlays", "attn-panel"},
}


def render(name: str, record: dict) -> dict:
    """What `AttnView.render` draws for `record` with the family's renderer loaded after attention.js."""
    script = "\n".join([STUB, shared_script(), FAMILIES[name].api.renderer_script(),
                        f"AttnView.render(document.body, {embed_json(record)}); console.log(summarise(document.body));"])  # fmt: skip
    out = subprocess.run([NODE, "-e", script], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


@pytest.mark.parametrize("name", sorted(RECORDS))
def test_each_familys_record_is_drawn_by_its_renderer(name):
    shown = render(name, RECORDS[name])
    assert EXPECTED[name] <= set(shown["classes"]), shown["classes"]
    assert RECORDS[name]["text"] in shown["text"]
    if name == "captioning":
        assert len(shown["images"]) == 3  # the input and one panel per word
    if name == "parsing":
        assert [src.split(";")[0] for src in shown["images"]] == ["data:image/svg+xml"]


def test_every_family_has_a_record_here():
    assert set(RECORDS) == set(FAMILIES)


def test_a_chart_parse_shows_its_span_chart():
    chart = {"words": ["a", "b"], "best": [[1.5, 2.0], [None, -0.5]], "labels": [["NP", "S"], ["", "VP"]], "in_tree": [[0, 1], [0, 0]]}
    shown = render("parsing", {**RECORDS["parsing"], "chart": chart})
    assert {"attn-tree", "attn-chart"} <= set(shown["classes"])
    assert "S" in shown["text"] and "span chart" in shown["text"]
