"""benchmarks/jw_number_for_number.py: their text filter, the per-run and over-runs summaries by hand, and the
whole file on two tiny one-hop classifier runs."""

from __future__ import annotations

import json
import math
import statistics
import sys
from types import SimpleNamespace

import pytest

from attnkit.families.classification.data import LabelledText
from attnkit.sources import open_source
from benchmark_scripts import load_benchmark

bench = load_benchmark("jw_number_for_number")


def test_their_sst_filter_keeps_more_than_five_words_and_fewer_than_the_longest(tiny_sase_run):
    loaded = open_source(str(tiny_sase_run)).loaded
    texts = ["t1 t2 t3 t4 t5", "t1 t2 t3 t4 t5 t6", "t1 t2 t3 t4 t5 t6 t7", "t1 t2 t3 t4 t5 t6 t7 t8"]
    kept = bench.their_texts([SimpleNamespace(text=t) for t in texts], loaded, "sst")
    assert [e.text for e in kept] == texts[1:3]
    assert len(bench.their_texts([SimpleNamespace(text=t) for t in texts], loaded, "snli")) == 4


def test_summaries_by_hand():
    s = bench.summary([0.1, 0.3, math.nan, 0.5], resamples=500)
    assert s["mean"] == pytest.approx(0.3) and s["std"] == pytest.approx(statistics.pstdev([0.1, 0.3, 0.5]))
    assert (s["n"], s["nan"]) == (3, 1) and 0.1 <= s["ci95"][0] <= 0.3 <= s["ci95"][1] <= 0.5
    o = bench.over_runs([[0.1, 0.3, math.nan], [0.2, 0.5, 0.4]], 500, (0.30, 0.2))
    means = [0.2, (0.2 + 0.5 + 0.4) / 3]
    assert o["mean"] == pytest.approx(statistics.fmean(means)) and o["spread"] == pytest.approx(means)
    assert o["texts"] == 2 and 0.15 <= o["ci95"][0] <= o["ci95"][1] <= 0.4  # texts 1, 2 averaged over the runs: 0.15, 0.4
    assert o["difference"] == pytest.approx(o["mean"] - 0.30) and o["within_tolerance"] and o["within_spread"]


def test_the_file_on_two_runs(tmp_path, tiny_sase_maker, monkeypatch, capsys):
    runs = [str(tiny_sase_maker(tmp_path / f"seed{s}", r=1, coef=0.0)) for s in (1, 2)]
    dev = [LabelledText("t1 t2 t3 t4 t5 t6", "pos"), LabelledText("t4 t5 t6 t7 t8 t9 t0", "neg"), LabelledText("t1 t2 t3 t4 t5 t6 t7 t8", "pos")]
    monkeypatch.setattr(bench, "classify_splits", lambda data: ([], dev))
    out = tmp_path / "jw.json"
    monkeypatch.setattr(sys, "argv", ["jw", *runs, "--out", str(out), "--resamples", "200", "--keep", str(tmp_path / "keep")])
    bench.main()
    doc = json.loads(capsys.readouterr().out)
    monkeypatch.setattr(bench, "measure_run", lambda run, args: pytest.fail("measured again"))  # the kept figures are read back
    bench.main()
    again = json.loads(capsys.readouterr().out)
    assert again["runs"] == doc["runs"] and again["over_runs"] == doc["over_runs"]
    assert doc == json.loads(out.read_text(encoding="utf-8")) and doc["cpu"] and doc["date"]
    assert [r["texts"] for r in doc["runs"]] == [2, 2]  # the longest dev text is left out
    assert set(doc["over_runs"]) == {"jw-code", "attnkit"}
    gl = doc["over_runs"]["jw-code"]["gradient vs loo"]
    assert gl["theirs"] == bench.THEIRS["sst"]["gl"][0] and gl["spread"][0] <= gl["mean"] <= gl["spread"][1]
