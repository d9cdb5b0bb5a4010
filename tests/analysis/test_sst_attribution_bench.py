"""benchmarks/sst_attention_attribution.py: the score it attributes is the classifier's own logit."""

from __future__ import annotations

import torch

from attnkit.analysis.attribution import integrated_gradients
from attnkit.families.sentence.model import SelfAttentiveClassifier
from benchmark_scripts import load_benchmark

bench = load_benchmark("sst_attention_attribution")


def test_the_logit_from_the_embeddings_is_the_models_logit_and_ig_is_complete() -> None:
    torch.manual_seed(0)
    model = SelfAttentiveClassifier(vocab_size=20, num_classes=3, embed_dim=8, u=6, d_a=5, r=2, mlp_hidden=7).eval()
    ids = torch.randint(2, 20, (1, 6))  # (1, S)
    keep = torch.ones_like(ids, dtype=torch.bool)  # (1, S)
    with torch.no_grad():
        logits = model(ids, keep).logits  # (1, C)
    for label in range(3):
        f = bench.logit_fn(model, keep, label)
        emb = model.embedding(ids).detach()  # (1, S, E)
        assert torch.allclose(f(emb.expand(2, -1, -1)), logits[0, label].expand(2), atol=1e-6)
        a = integrated_gradients(f, emb)
        assert a.scores.shape == (6,) and a.relative_error <= 0.01
