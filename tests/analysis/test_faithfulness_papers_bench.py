"""benchmarks/faithfulness_papers.py: Spearman's rho by hand, the permutation experiment's hook, and the `jw` table
on a tiny one-hop sentence classifier beside its uniform-attention twin."""

from __future__ import annotations

import json
import math
import sys

import pytest
import torch

from attnkit.families.sentence.infer import model_inputs
from attnkit.sources import open_source
from benchmark_scripts import load_benchmark

bench = load_benchmark("faithfulness_papers")


def test_spearman_by_hand():
    assert bench.spearman([1.0, 2.0, 3.0], [10.0, 20.0, 30.0]) == pytest.approx(1.0)
    # ranks (0.5, 0.5, 2) and (0, 1, 2): r = 1.5 / sqrt(1.5 * 2)
    assert bench.spearman([1.0, 1.0, 2.0], [1.0, 2.0, 3.0]) == pytest.approx(1.5 / math.sqrt(3.0))
    assert math.isnan(bench.spearman([1.0, 1.0], [1.0, 2.0]))


@pytest.fixture(scope="module")
def one_hop_runs(tmp_path_factory, tiny_sase_maker):
    root = tmp_path_factory.mktemp("runs")
    return tiny_sase_maker(root / "jw", r=1, coef=0.0), tiny_sase_maker(root / "uniform", pooling="mean")


def test_a_permutation_that_changes_nothing_changes_no_output(one_hop_runs):
    loaded = open_source(str(one_hop_runs[0])).loaded
    tvd, top = bench.permutation_tvd(loaded, "t4", permutations=3, seed=0)  # one word: every permutation is the identity
    assert tvd == 0.0 and top == pytest.approx(1.0)
    tvd, top = bench.permutation_tvd(loaded, "t1 t2 t3 t4 t5 t6", permutations=20, seed=0)
    with torch.no_grad():
        a = loaded.model(*model_inputs(loaded, "t1 t2 t3 t4 t5 t6")).attention[0]  # (1, S)
    assert tvd > 0.0 and top == pytest.approx(float(a.max()))


def test_the_jain_wallace_table(one_hop_runs, tmp_path, monkeypatch, capsys):
    run, uniform = map(str, one_hop_runs)
    dev = tmp_path / "dev.tsv"
    dev.write_text("text\tlabel\nt1 t2 t3\tpos\nt4 t5 t6 t7\tneg\nt8 t9\tpos\n", encoding="utf-8")
    monkeypatch.setattr(sys, "argv", ["fp", "jw", run, "--uniform", uniform, "--dev", str(dev), "--out", str(tmp_path / "o"), "--permutations", "5"])
    bench.main()
    doc = json.loads(capsys.readouterr().out)
    assert doc == json.loads((tmp_path / "o" / "jw.json").read_text())
    assert doc["texts"] == 3 and set(doc["kendall_tau"]) == {"hops/layer1 vs ixg", "hops/layer1 vs loo", "ixg vs loo"}
    assert all(v["n"] == 3 for v in doc["kendall_tau"].values())
    assert sum(b["texts"] for b in doc["permutation"]["by_max_attention"].values()) == 3
    base = doc["uniform_baseline"]
    assert base["difference"] == pytest.approx(base["accuracy_attention"] - base["accuracy_uniform"])
    assert (tmp_path / "o" / "faithfulness" / "faithfulness.json").is_file()
