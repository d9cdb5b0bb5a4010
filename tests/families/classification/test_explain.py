"""`attnkit explain`: its PNG is drawn by `viz.views.plot_hops_view` alone (one panel a sentence, the record's
hops), its HTML is the report page of the one road (the family's renderer over `maps.hops`)."""

from __future__ import annotations

import json
import re

import matplotlib.figure
import numpy as np

from attnkit.cli import main
from attnkit.families.classification.explain import hops_map
from attnkit.families.classification.explore import note
from attnkit.families.classification.infer import ClassifyResult
from attnkit.viz import views

RESULT = ClassifyResult("pos", {"neg": 0.25, "pos": 0.75}, ["a", "<b>", "c"], [[0.5, 0.5, 0.0], [0.0, 0.9, 0.1]])
DATA = re.compile(r'<script type="application/json" id="attention-data">(.*?)</script>', re.S)


def test_a_panel_is_the_hops_with_their_labels_and_the_class():
    m = hops_map(RESULT)
    np.testing.assert_array_equal(m.weights, np.float32(RESULT.attention))  # (R, n) as the model gave it
    assert m.rows == ["hop 1", "hop 2"] and m.cols == ["a", "<b>", "c"] and m.title == note(RESULT) == "pos, p = 0.750 (neg 0.250)"


def test_the_png_is_drawn_by_plot_hops_view_alone(tiny_sase_run, tmp_path, monkeypatch):
    """Every figure `explain` saves is saved inside `plot_hops_view`: a second drawing of the hops fails here."""
    inside, saved, real_plot, real_save = [], [], views.plot_hops_view, matplotlib.figure.Figure.savefig

    def plot(maps, path):
        inside.append(maps)
        return real_plot(maps, path)

    def savefig(fig, *args, **kwargs):
        saved.append((len(inside), len(fig.axes)))
        return real_save(fig, *args, **kwargs)

    monkeypatch.setattr(views, "plot_hops_view", plot)
    monkeypatch.setattr(matplotlib.figure.Figure, "savefig", savefig)
    png = tmp_path / "e.png"
    assert main(["explain", str(tiny_sase_run), "t1 t2 t3", "t4 t2", "--out", str(png)]) == 0
    assert saved == [(1, 2)]  # one figure, saved by the one call of plot_hops_view, a panel a sentence
    assert [m.cols for m in inside[0]] == [["t1", "t2", "t3"], ["t4", "t2"]] and png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_the_html_is_the_report_page(tiny_sase_run, tmp_path):
    explained, report = tmp_path / "e.html", tmp_path / "r.html"
    assert main(["explain", str(tiny_sase_run), "t1 t2 t3", "--out", str(explained)]) == 0
    assert main(["report", str(tiny_sase_run), "t1 t2 t3", "--out", str(report)]) == 0
    page, other = explained.read_text(encoding="utf-8"), report.read_text(encoding="utf-8")
    assert DATA.findall(page) == DATA.findall(other) and "<title>attnkit explain: " in page
    (record,) = json.loads(DATA.findall(page)[0])
    assert record["maps"]["hops"]["rows"] == ["hop 1", "hop 2"] and record["maps"]["hops"]["cols"] == ["t1", "t2", "t3"]
    assert "function renderHops" in page  # drawn by the family's renderer, classify-view.js
