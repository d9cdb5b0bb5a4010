"""The attention-map contract (`viz.attention_view`): a kind that no family declares and no page knows,
made by a family defined only here, goes through the one road (`Family.explain` -> `sources.record.explain_inputs`),
the one serializer (`viz.records`), the explorer's records (`sources.page`), `attnkit attention`'s npz
(`sources.npz.write_record`), `plot --view`, and the report page in headless Chromium, and is drawn everywhere.
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
from attnkit.sources.npz import npz_writer, write_record
from attnkit.sources.page import page_record
from attnkit.sources.record import explain_inputs
from attnkit.sources.source import RunSource
from attnkit.sources.store import NpzStore
from attnkit.viz.attention_view import AttentionView, ExplainedInput
from attnkit.viz.records import records_json
from attnkit.viz.report import write_report
from attnkit.viz.views import plot_view

KIND = "glimpse"  # declared by no family, known to no page
QUERIES, KEYS = ["g1", "g2", "g3"], ["a", "b", "c", "d"]
WEIGHTS = torch.tensor([[0.7, 0.1, 0.1, 0.1], [0.0, 1.0, 0.0, 0.0], [0.25, 0.25, 0.25, 0.25]])  # (Tq, Tk): rows sum to 1


def explain(loaded, lines, options) -> list[ExplainedInput]:
    """The made-up family's builder: per line one view of the made-up kind, two layers of two heads."""
    layers = [torch.stack([WEIGHTS, WEIGHTS.flip(-1)]) for _ in range(2)]  # (H, Tq, Tk) each
    view = AttentionView(KIND, QUERIES, KEYS, layers, "glimpses", ("keys", "glimpses"))
    return [ExplainedInput(line, f"seen: {line}", [view]) for line in lines]


@pytest.fixture
def loaded(tmp_path):
    """A loaded 'run' of a family defined only here: what `sources.run` reads of one (folder, family, decode settings)."""
    family = replace(FAMILIES["translation"], name="toy", explain=explain, attention_kinds=(), attribution=None)
    return SimpleNamespace(folder=tmp_path / "toy-run", family=family, run=SimpleNamespace(decode=Decode()))


def test_the_builder_and_the_serializer_keep_a_kind_no_one_declared(loaded):
    (e,) = explain_inputs(RunSource(loaded), ["x y"])
    assert [v.kind for v in e.views] == [KIND]  # no self-attention kind: nothing to roll out
    (record,) = records_json([e])
    assert record["source"] == "x y" and record["text"] == "seen: x y" and list(record["maps"]) == [KIND] and record["schema"] == 2
    entry = record["maps"][KIND]
    assert (entry["title"], entry["rows"], entry["cols"]) == ("glimpses", QUERIES, KEYS)
    assert np.allclose(entry["layers"][1][1], WEIGHTS.flip(-1).numpy())  # (L, H, Tq, Tk): layer 2, head 2


def test_the_explorer_record_the_npz_and_plot_keep_it(loaded, tmp_path):
    record = page_record(RunSource(loaded), "x y")
    assert list(record["maps"]) == [KIND] and record["maps"][KIND]["title"] == "glimpses"  # the family's own title
    assert len(record["maps"][KIND]["data"]) == 2 and len(record["maps"][KIND]["data"][0]) == 2  # (L, H) maps as bytes
    with npz_writer(tmp_path / "a.npz") as writer:
        (e,) = explain_inputs(RunSource(loaded), ["x y"], store=lambda: NpzStore(writer))
        summary = write_record(writer, e)
    z = np.load(tmp_path / "a.npz")
    assert summary["kinds"] == {KIND: 2} and np.array_equal(z[f"{KIND}/layer2"][0], WEIGHTS.numpy())
    assert list(z[f"{KIND}/queries"]) == QUERIES and list(z["tokens"]) == KEYS
    (e,) = explain_inputs(RunSource(loaded), ["x y"])
    layers = np.stack([w.numpy() for w in e.view(KIND).layers])
    assert layers.shape == (2, 2, 3, 4)
    assert plot_view("heatmap", layers, e.view(KIND).rows, e.view(KIND).cols, tmp_path / "g.png").read_bytes()[:4] == b"\x89PNG"


CHROMIUM = "/usr/bin/chromium"


@pytest.mark.slow
def test_the_report_page_draws_it(loaded, tmp_path):
    if not Path(CHROMIUM).is_file():
        pytest.skip(f"{CHROMIUM} is absent (apt-get install chromium)")
    sync_api = pytest.importorskip("playwright.sync_api", reason="the playwright package is not installed (pip install -e .[dev])")
    records = [*records_json(explain_inputs(RunSource(loaded), ["x y"])), dict(page_record(RunSource(loaded), "x y"), id=1)]
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
        for i in range(2):  # floats, then bytes: the family's title on both
            card = cards.nth(i)
            assert card.locator(".attn-kind option").evaluate_all("os => os.map(o => [o.value, o.textContent])") == [[KIND, "glimpses"]]
            assert card.locator(".attn-heatmap canvas.attn-canvas").evaluate(inked) > 0
        browser.close()
    assert errors == []
