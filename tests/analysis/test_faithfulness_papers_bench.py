"""benchmarks/faithfulness_papers.py: Spearman's rho by hand, the permutation experiment's hook, and the `jw` table
on a tiny one-hop sentence classifier beside its uniform-attention twin."""

from __future__ import annotations

import json
import math
import sys

import pytest
import torch

from attnkit.families.classification.infer import model_inputs
from attnkit.families.classification.jain_wallace import jw_code_scores
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
    assert set(doc["kendall_tau_jw_code"]) == {"hops/layer1 vs gradient", "hops/layer1 vs loo", "gradient vs loo"}
    assert all(v["n"] == 3 for v in doc["kendall_tau_jw_code"].values())
    assert sum(b["texts"] for b in doc["permutation"]["by_max_attention"].values()) == 3
    base = doc["uniform_baseline"]
    assert base["difference"] == pytest.approx(base["accuracy_attention"] - base["accuracy_uniform"])
    assert (tmp_path / "o" / "faithfulness" / "faithfulness.json").is_file()


def test_correlations_per_pair_by_hand():
    outs = [
        {"tokens": ["a", "b", "c"], "scores": {"att": [0.1, 0.5, 0.4], "ixg": [-3.0, 1.0, 2.0]}},  # |ixg| orders every pair the other way
        {"tokens": ["a", "b", "c"], "scores": {"att": [0.1, 0.5, 0.4], "ixg": [1.0, 5.0, -4.0]}},  # |ixg| orders every pair the same way
        {"tokens": ["a"], "scores": {"att": [1.0], "ixg": [2.0]}},  # one token: no ranking to compare
    ]
    got = bench.correlations(outs, [("att", "ixg")], {"ixg"}, bench.tau)
    assert got == {"att vs ixg": {"mean": 0.0, "std": round(math.sqrt(2.0), 4), "n": 2}}
    signed = bench.correlations(outs[1:2], [("att", "ixg")], set(), bench.tau)  # signed: 5 > 1 > -4 against 0.5 > 0.4 > 0.1
    assert signed["att vs ixg"]["mean"] == pytest.approx(1 / 3, abs=1e-4)


def test_the_permutation_experiment_by_hand(one_hop_runs):
    """One permutation: the output of M = (A permuted) H through the classifier, against the model's own output."""
    loaded = open_source(str(one_hop_runs[0])).loaded
    text = "t1 t2 t3 t4 t5"
    tvd, top = bench.permutation_tvd(loaded, text, permutations=1, seed=7)
    model = loaded.model
    tokens, keep = model_inputs(loaded, text)
    perm = torch.randperm(5, generator=torch.Generator().manual_seed(7))
    with torch.no_grad():
        h = model.lstm(model.embedding(tokens))[0]  # (1, 5, 2u)
        _, a = model.attention(h, keep)  # (1, 1, 5)
        p = model.classifier((a @ h).flatten(1)).double().softmax(-1)  # (1, C)
        q = model.classifier((a[..., perm] @ h).flatten(1)).double().softmax(-1)  # (1, C)
    assert tvd == pytest.approx(0.5 * float((q - p).abs().sum()), abs=1e-6)
    assert top == pytest.approx(float(a.max()))


def test_the_abnar_zuidema_check_on_a_transformer_sentence_classifier(tiny_sase_maker, tmp_path, monkeypatch, capsys):
    run = tiny_sase_maker(tmp_path / "az", encoder="transformer", pooling="mean", layers=2, heads=2, d_ff=16)
    data = tmp_path / "dev.tsv"
    data.write_text("text\tlabel\nt1 t2 t3\tpos\nt4 t5 t6 t7\tneg\n", encoding="utf-8")
    monkeypatch.setattr(sys, "argv", ["fp", "az", str(run), "--data", str(data), "--out", str(tmp_path / "o")])
    bench.main()
    doc = json.loads(capsys.readouterr().out)
    assert doc["raw_attention"] == "encoder/layer2" and doc["outputs"] == 2
    assert all(v["n"] == 2 and -1.0 <= v["mean"] <= 1.0 for v in doc["kendall_tau"].values())
    # rollout of the mean-pooled output: the mean row of A'_2 A'_1, A'_l = the head mean with the residual
    loaded = open_source(str(run)).loaded
    with torch.no_grad():
        maps = loaded.model(*model_inputs(loaded, "t1 t2 t3"), need_weights=True).encoder  # (1, heads, 3, 3) per layer
    from attnkit.analysis.rollout import with_residual

    a1, a2 = (with_residual(w[0].mean(0)) for w in maps)
    first = bench.outputs(tmp_path / "o" / "faithfulness")[0]
    torch.testing.assert_close(torch.tensor(first["scores"]["rollout"], dtype=torch.float64), (a2 @ a1).mean(0).double(), atol=1e-6, rtol=0)
    want = bench.spearman(first["scores"]["rollout"], first["scores"]["loo"])
    second = bench.outputs(tmp_path / "o" / "faithfulness")[1]
    assert doc["spearman"]["rollout vs loo"]["mean"] == pytest.approx(
        (want + bench.spearman(second["scores"]["rollout"], second["scores"]["loo"])) / 2, abs=1e-4
    )


def test_jain_wallaces_code_gradient_and_leave_one_out_by_hand(one_hop_runs):
    """Their `XxE[X]` with the attention detached, and their deletion leave-one-out, from the model's pieces."""
    loaded = open_source(str(one_hop_runs[0])).loaded
    model, text = loaded.model, "t1 t2 t3 t4 t5"
    scores = jw_code_scores(loaded, text)
    gradient, loo = scores.gradient, scores.loo
    tokens, keep = model_inputs(loaded, text)
    e = model.embedding(tokens).detach().requires_grad_(True)  # (1, 5, E)
    h = model.lstm(e)[0]  # (1, 5, 2u)
    _, a = model.attention(h, keep)  # (1, 1, 5)
    p = model.classifier((a.detach() @ h).flatten(1)).double().softmax(-1)[0]  # (C,)
    xxe = (torch.autograd.grad(p[1], e, retain_graph=True)[0] * e).sum(-1)[0].abs()  # (5,): two classes, |d p(0)| = |d p(1)|
    assert gradient == pytest.approx((xxe / xxe.sum()).tolist(), abs=1e-6)
    through = model.classifier((a @ h).flatten(1)).double().softmax(-1)[0, 1]  # the gradient through the weights as well
    full = (torch.autograd.grad(through, e)[0] * e).sum(-1)[0].abs()
    assert max(abs(x - y) for x, y in zip(gradient, (full / full.sum()).tolist())) > 1e-4  # detaching changes the figures
    with torch.no_grad():
        for i in range(5):
            kept = [j for j in range(5) if j != i]
            q = model(tokens[:, kept], keep[:, kept]).logits[0].double().softmax(-1)  # (C,): the word deleted
            assert loo[i] == pytest.approx(float((q - p.detach()).abs().mean()), abs=1e-6)
    assert jw_code_scores(loaded, "t4").loo == [0.0]
