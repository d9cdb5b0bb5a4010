"""attnkit's input x gradient and integrated gradients against a reference written here, not through captum.

The reference differentiates with `torch.autograd.grad` and integrates integrated gradients' path
(Sundararajan et al. 2017, eq. 1) by the midpoint Riemann sum at `RIEMANN` points, whose error falls as
1/m^2: far under the tolerance for these smooth scores. On a tiny random BERT classifier the score is
also computed independently of attnkit's embedding hook: `inputs_embeds=` replaces the word
embeddings, BERT adding positions and token types after, as the hook's replacement does.
"""

import pytest
import torch

from attnkit.analysis.attribution import input_x_gradient, integrated_gradients

pytest.importorskip("captum")

RIEMANN = 2000  # midpoint-rule points of the reference path integral


def gradient(f, x):
    """df/dx at x (1, T, D), by autograd."""
    x = x.detach().clone().requires_grad_(True)
    (g,) = torch.autograd.grad(f(x).sum(), x)
    return g  # (1, T, D)


def riemann_ig(f, x, baseline, m=RIEMANN):
    """(x - x') * (1/m) sum_j df/dx at x' + (j - 1/2)/m (x - x'), summed over the embedding axis: (T,)."""
    alphas = (torch.arange(m, dtype=x.dtype) + 0.5) / m  # (m,)
    path = baseline + alphas.view(m, 1, 1) * (x - baseline)  # (m, T, D)
    grads = torch.cat([gradient(f, chunk) for chunk in path.split(250)])  # (m, T, D)
    return ((x - baseline) * grads.mean(dim=0, keepdim=True)).sum(dim=-1)[0]  # (T,)


def attention_score(seed=0, D=8):
    """A nonlinear score of (N, T, D) embeddings: softmax attention pooling over tanh features, one logit."""
    g = torch.Generator().manual_seed(seed)
    w1, w2, q = torch.randn(D, 16, generator=g), torch.randn(16, generator=g), torch.randn(D, generator=g)

    def f(x):  # (N, T, D) -> (N,)
        alpha = torch.softmax(x @ q, dim=-1)  # (N, T)
        return (alpha * (torch.tanh(x @ w1) @ w2)).sum(dim=-1)  # (N,)

    return f


def check(f, x, baseline=None):
    """attnkit's two methods against the reference at x (T, D), from `baseline` (zeros)."""
    x3 = x.unsqueeze(0)  # (1, T, D)
    base = torch.zeros_like(x3) if baseline is None else baseline.unsqueeze(0)  # (1, T, D)
    reference = riemann_ig(f, x3, base)  # (T,)
    scale = float(reference.abs().max())
    expected_ixg = (x3 * gradient(f, x3)).sum(dim=-1)[0]  # (T,)
    assert torch.allclose(input_x_gradient(f, x).scores, expected_ixg, atol=1e-6 * max(scale, 1.0))
    got = integrated_gradients(f, x, baseline=baseline)
    assert got.scores.shape == (x.size(0),)
    assert torch.allclose(got.scores, reference, atol=2e-4 * scale)
    with torch.no_grad():  # the reference itself is complete: its sum is f(x) - f(x')
        assert float(reference.sum()) == pytest.approx(float(f(x3) - f(base)), rel=1e-3, abs=1e-5)


@pytest.mark.parametrize("seed", range(2))
def test_attributions_of_an_attention_score_match_the_reference(seed):
    g = torch.Generator().manual_seed(seed + 10)
    x = torch.randn(6, 8, generator=g)  # (T, D)
    check(attention_score(seed), x)
    check(attention_score(seed), x, baseline=0.3 * torch.randn(6, 8, generator=g))


def test_attributions_of_a_tiny_bert_classifier_match_the_reference():
    transformers = pytest.importorskip("transformers")
    from attnkit.sources.hf.attribute import score_function
    from attnkit.sources.hf.inputs import HfInputs
    from attnkit.sources.hf.load import HfModel

    config = transformers.BertConfig(vocab_size=30, hidden_size=16, num_hidden_layers=2, num_attention_heads=4, intermediate_size=32,
                                     max_position_embeddings=32, num_labels=3)  # fmt: skip
    torch.manual_seed(0)
    model = transformers.BertForSequenceClassification(config).eval()
    ids = torch.tensor([[2, 7, 11, 5, 19, 3]])  # (1, S)
    inputs = {"input_ids": ids, "attention_mask": torch.ones_like(ids)}
    hf = HfModel("tiny-bert", model, None, None, "encoder", 32)
    f, x, label = score_function(hf, HfInputs(inputs, [str(i) for i in ids[0].tolist()]), None)
    c = int(model(**inputs).logits[0].argmax())
    assert label.startswith(f"class {c}")

    def reference(e):  # (N, S, D) -> (N,): the class logit, the word embeddings given to BERT directly
        mask = inputs["attention_mask"].expand(e.size(0), -1)  # (N, S)
        return model(inputs_embeds=e, attention_mask=mask).logits[:, c]

    with torch.no_grad():
        assert torch.allclose(f(x.unsqueeze(0)), reference(x.unsqueeze(0)), atol=1e-6)
    check(reference, x)
    assert torch.allclose(input_x_gradient(f, x).scores, input_x_gradient(reference, x).scores, atol=1e-6)
