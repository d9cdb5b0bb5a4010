"""benchmarks/sst_attention_attribution.py: it attributes the family's score (`class_score`), the classifier's own
log-probability or logit of the class, and IG of it is complete."""

from __future__ import annotations

import json
import sys

import pytest
import torch

from attnkit.analysis.attribution import integrated_gradients
from attnkit.families.classification.explore import class_score
from attnkit.families.classification.model import SelfAttentiveClassifier
from benchmark_scripts import load_benchmark

bench = load_benchmark("sst_attention_attribution")


@pytest.mark.parametrize("logit", [False, True])
def test_the_score_from_the_embeddings_is_the_models_own_and_ig_is_complete(logit) -> None:
    torch.manual_seed(0)
    model = SelfAttentiveClassifier(vocab_size=20, num_classes=3, embed_dim=8, u=6, d_a=5, r=2, mlp_hidden=7).eval()
    ids = torch.randint(2, 20, (1, 6))  # (1, S)
    keep = torch.ones_like(ids, dtype=torch.bool)  # (1, S)
    with torch.no_grad():
        logits = model(ids, keep).logits  # (1, C)
    want = logits if logit else logits.log_softmax(-1)  # (1, C)
    for label in range(3):
        f = class_score(model, (ids, keep), label, logit=logit)
        emb = model.embedding(ids).detach()  # (1, S, E)
        assert torch.allclose(f(emb.expand(2, -1, -1)), want[0, label].expand(2), atol=1e-6)
        a = integrated_gradients(f, emb)
        assert a.scores.shape == (6,) and a.relative_error <= 0.01


def test_the_script_runs_on_sst_trees(tiny_sase_run, tmp_path, monkeypatch, capsys) -> None:
    """On a tiny run and three SST trees: one JSON line with the score it attributed and a tau per hop."""
    dev = tmp_path / "dev.txt"
    dev.write_text("(3 (2 t1) (3 (2 t2) (3 t3)))\n(1 (2 t4) (1 t5))\n(2 t6)\n", encoding="utf-8")
    monkeypatch.setattr(sys, "argv", ["sst", str(tiny_sase_run), "--dev", str(dev), "--n", "3", "--threads", "1"])
    bench.main()
    doc = json.loads(capsys.readouterr().out)
    assert doc["score"] == "log_prob" and doc["sentences"] == 3 and doc["tau_sentences"] + doc["ig_incomplete"] == 2  # one word: no ranking
    assert set(doc["kendall_tau_ig"]) <= {"hop1", "hop2", "hop_mean"}
