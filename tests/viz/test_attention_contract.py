"""The attention-map contract (`viz.attention_view`): a kind that no family declares and no page knows,
made by a family defined only here, goes through the one record builder (`Family.explain`: `views`,
`records`), the one serializer (`viz.records`), the explorer's record (`sources.page`), `attnkit
attention`'s npz, `plot --view`, and the report page in headless Chromium, and is drawn everywhere.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import torch

from attnkit.config.schema import Decode
from attnkit.families import FAMILIES
from attnkit.families.protocol import ExploreOptions
from attnkit.sources.npz import npz_writer
from attnkit.sources.options import AttentionOptions
from attnkit.sources.page import attention_kinds, collect, float_maps, page_record
from attnkit.sources.run import write_run
from attnkit.sources.source import RunSource
from attnkit.viz.attention_view import AttentionView, Explained
from attnkit.viz.report import write_report
from attnkit.viz.views import plot_view

KIND = "glimpse"  # declared by no family, known to no page
QUERIES, KEYS = ["g1", "g2", "g3"], ["a", "b", "c", "d"]
WEIGHTS = torch.tensor([[0.7, 0.1, 0.1, 0.1], [0.0, 1.0, 0.0, 0.0], [0.25, 0.25, 0.25, 0.25]])  # (Tq, Tk): rows sum to 1


def explain(loaded, lines, options) -> list[Explained]:
    """The made-up family's builder: per line one view of the made-up kind, two layers of two heads."""
    layers = [torch.stack([WEIGHTS, WEIGHTS.flip(-1)]) for _ in range(2)]  # (H, Tq, Tk) each
    view = AttentionView(KIND, QUERIES, KEYS, layers, "glimpses", ("keys", "glimpses"))
    return [Explained(line, f"seen: {line}", [view]) for line in lines]


@pytest.fixture
def loaded(tmp_path):
    """A loaded 'run' of a family defined only here: what `write_run` reads of one (folder, family, decode settings)."""
    family = replace(FAMILIES["translation"], name="toy", explain=explain, attention_kinds=(), attribution=None)
    return SimpleNamespace(folder=tmp_path / "toy-run", family=family, run=SimpleNamespace(decode=Decode()))


def test_the_builder_and_the_serializer_keep_a_kind_no_one_declared(loaded):
    (views,) = loaded.family.views(loaded, ["x y"], ExploreOptions(Decode()))
    assert [v.kind for v in views] == [KIND]
    (record,) = loaded.family.records(loaded, ["x y"], ExploreOptions(Decode()))
    assert record["source"] == "x y" and record["text"] == "seen: x y" and list(record["maps"]) == [KIND]
    entry = record["maps"][KIND]
    assert (entry["title"], entry["rows"], entry["cols"]) == ("glimpses", QUERIES, KEYS)
    assert np.allclose(entry["layers"][1][1], WEIGHTS.flip(-1).numpy())  # (L, H, Tq, Tk): layer 2, head 2


def test_the_explorer_record_the_npz_and_plot_keep_it(loaded, tmp_path):
    assert KIND not in attention_kinds(RunSource(loaded))
    record = page_record(RunSource(loaded), "x y")
    assert list(record["maps"]) == [KIND] and record["maps"][KIND]["title"] == KIND  # the generic kind: its name
    assert len(record["maps"][KIND]["data"]) == 2 and len(record["maps"][KIND]["data"][0]) == 2  # (L, H) maps as bytes
    with npz_writer(tmp_path / "a.npz") as writer:
        summary = write_run(loaded, "x y", writer, AttentionOptions())
    z = np.load(tmp_path / "a.npz")
    assert summary["kinds"] == {KIND: 2} and np.array_equal(z[f"{KIND}/layer2"][0], WEIGHTS.numpy())
    assert list(z[f"{KIND}/queries"]) == QUERIES and list(z["tokens"]) == KEYS
    arrays, summary = collect(RunSource(loaded), "x y", AttentionOptions(), quantize=False)
    m = float_maps(arrays, summary["kinds"], attention_kinds(RunSource(loaded)))[KIND]
    assert m["layers"].shape == (2, 2, 3, 4)
    assert plot_view("heatmap", m["layers"], m["rows"], m["cols"], tmp_path / "g.png").read_bytes()[:4] == b"\x89PNG"


CHROMIUM = "/usr/bin/chromium"


@pytest.mark.slow
def test_the_report_page_draws_it(loaded, tmp_path):
    if not Path(CHROMIUM).is_file():
        pytest.skip(f"{CHROMIUM} is absent (apt-get install chromium)")
    sync_api = pytest.importorskip("playwright.sync_api", reason="the playwright package is not installed (pip install -e .[dev])")
    records = [*loaded.family.records(loaded, ["x y"], ExploreOptions(Decode())), dict(page_record(RunSource(loaded), "x y"), id=1)]
    path = write_report(records, tmp_path / "report.html", title="toy")
    inked = "c => { const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data; let n = 0; for (let i = 0; i < d.length; i += 4) if (d[i] < 250) n++; return n; }"
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--headless", "--no-sandbox", "--disable-gpu"])
        page = browser.new_page()
        errors = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto(path.as_uri())
        page.wait_for_selector(".attn-heatmap canvas.attn-canvas")
        cards = page.locator(".attn-card")
        assert cards.count() == 2
        for i, title in enumerate(["glimpses", KIND]):  # the family's title, then the generic one (the explorer's record)
            card = cards.nth(i)
            assert card.locator(".attn-kind option").evaluate_all("os => os.map(o => [o.value, o.textContent])") == [[KIND, title]]
            assert card.locator(".attn-heatmap canvas.attn-canvas").evaluate(inked) > 0
        browser.close()
    assert errors == []
