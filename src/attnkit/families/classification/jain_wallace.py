"""Jain & Wallace (2019), "Attention is not Explanation", sec. 4.1, number for number: the three Kendall taus per
text, with each measure defined as their released code (successar/AttentionExplanation) computes it.

Two named definitions (`DEFINITIONS`):

- ``jw-code`` (`jw_code_scores`, `jw_code_taus`), their code's:
  * attention: the model's weights over the (premise's) words;
  * gradient (`XxE[X]`: `gradient_mem` and `process_grads` of `Binary_Classification`/`PlottingBC` and of
    `Question_Answering`/`PlottingQA`, SNLI's): g = d p(c) / d e_t for the predicted class c, with the attention
    weights detached (`batch_data.detach`: the gradient reaches the words through the states H only), the word's
    score |sum_d g_d e_t,d|, normalised to sum 1. Their binary models have one sigmoid output and take its
    gradient; with two softmax classes d p(0) = -d p(1), so the scores are theirs whichever class is predicted;
  * leave-one-out (`remove_and_run`, `PlottingBC.plot_correlation_between_grad_and_loo`): the word removed
    (`removal="delete"`, theirs: cut out of the sequence, the text one word shorter; `"mask"`: replaced by
    `<unk>`; `"pad"`: replaced by `<pad>`, whose embedding is zero, in place), scored by the mean over the
    classes of |p(c | x without it) - p(c | x)| (the binary code's |change| of its one output; SNLI's code sums
    over the three classes, three times the mean, the same ranking);
  * Kendall's tau-b (scipy's `kendalltau`) per text over the words (their [1:L-1]: the words without <SOS> and
    <EOS>, which attnkit's model does not have). Their table's rows are labelled `ag`, `al`, `gl`, but their
    code puts tau(leave-one-out, attention) under `ag` and tau(attention, gradient) under `al`
    (`spcorr_ag = measure(ydiff, attn)`, `spcorr_al = measure(attn, grad)`): `THEIR_ROWS` maps each pair to
    the row that holds it.
- ``attnkit``: the generic definitions of `attnkit faithfulness` (`sources.faithfulness.method_scores`):
  |input x gradient| of log p(predicted class) through the attention, and |p(y | x) - p(y | x')|, x' the
  word's embedding set to zero (`--removal pad`).

They ran their modules in train mode; their models have no dropout, so that is eval mode. A one-word text
leaves nothing to delete: its leave-one-out is 0 (a tau needs two words).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from attnkit.analysis.correlation import kendall_tau
from attnkit.artifacts.runs import LoadedRun
from attnkit.data.vocab import PAD, UNK
from attnkit.errors import AttnkitError
from attnkit.families.classification.infer import model_inputs

DEFINITIONS = ("jw-code", "attnkit")
REMOVALS = ("delete", "mask", "pad")
PAIRS = ("attention vs gradient", "attention vs loo", "gradient vs loo")
THEIR_ROWS = {"attention vs loo": "ag", "attention vs gradient": "al", "gradient vs loo": "gl"}  # module docstring


@dataclass
class TextScores:
    """One text's (a pair's premise's) three measures, one value per word."""

    attention: list[float]
    gradient: list[float]
    loo: list[float]


def removed_inputs(inputs: tuple[torch.Tensor, ...], removal: str) -> tuple[torch.Tensor, ...]:
    """The (first) text's inputs (tokens, keep[, tokens2, keep2]), each (1, S), with each word i removed in row i:
    (S, S - 1) deleted, or (S, S) with the word replaced by <unk> ("mask") or <pad> ("pad"); a pair's hypothesis
    is repeated per row."""
    tokens, keep = inputs[0], inputs[1]  # (1, S) each
    n = tokens.size(1)
    rest = tuple(t.expand(n, -1) for t in inputs[2:])  # (S, S2) each
    if removal == "delete":
        drop = ~torch.eye(n, dtype=torch.bool, device=tokens.device)  # (S, S): row i keeps all but i
        return tokens.expand(n, -1)[drop].view(n, n - 1), keep.expand(n, -1)[drop].view(n, n - 1), *rest
    if removal not in REMOVALS:
        raise AttnkitError(f"removal {removal!r}: one of {', '.join(REMOVALS)}")
    fill = torch.eye(n, dtype=torch.bool, device=tokens.device)  # (S, S)
    return tokens.expand(n, -1).masked_fill(fill, UNK if removal == "mask" else PAD), keep.expand(n, -1), *rest


def jw_code_scores(loaded: LoadedRun, text: str, removal: str = "delete") -> TextScores:
    """The attention, gradient and leave-one-out of one text's (a pair's first text's) words (module docstring)."""
    model = loaded.model
    if model.attention is None:
        raise AttnkitError(f"{loaded.folder}: Jain & Wallace's measures need attention pooling (model.pooling: attention)")
    inputs = model_inputs(loaded, text)  # (tokens, keep[, tokens2, keep2]), each (1, S)
    seen: dict[str, torch.Tensor] = {}

    def embedded(module, args, output):  # the (first) text's embeddings, a leaf to take the gradient at
        if "e" not in seen:
            seen["e"] = output.detach().requires_grad_(True)  # (1, S, E)
            return seen["e"]
        return None

    def detached(module, args, output):  # M = A H with A detached; a pair's hypothesis keeps its own
        if "a" not in seen:
            seen["a"] = weights = output[1].detach()  # (1, R, S)
            h = args[2] if len(args) > 2 else args[0]  # (1, S, 2u): additive attention's values, or structured's H
            return torch.einsum("brs,bsd->brd", weights, h), weights
        return None

    handles = [model.embedding.register_forward_hook(embedded), model.attention.register_forward_hook(detached)]
    try:
        with torch.enable_grad(), torch.backends.cudnn.flags(enabled=False):
            p = model(*inputs).logits[0].double().softmax(-1)  # (C,)
            grad = torch.autograd.grad(p.max(), seen["e"])[0]  # (1, S, E): the predicted class's
    finally:
        for handle in handles:
            handle.remove()
    xxe = (grad * seen["e"].detach()).sum(-1)[0].abs().double()  # (S,)
    gradient = xxe / xxe.sum()
    attention = seen["a"][0].mean(0).double()  # (S,): one hop, or the hops' mean
    if inputs[0].size(1) < 2 and removal == "delete":
        return TextScores(attention.tolist(), gradient.tolist(), [0.0])
    with torch.no_grad():
        q = model(*removed_inputs(inputs, removal)).logits.double().softmax(-1)  # (S, C)
    return TextScores(attention.tolist(), gradient.tolist(), (q - p.detach()).abs().mean(-1).tolist())


def jw_code_taus(scores: TextScores) -> dict[str, float]:
    """Kendall's tau-b of each pair of measures over the text's words (NaN for one word or a constant measure)."""
    if len(scores.attention) < 2:
        return dict.fromkeys(PAIRS, float("nan"))
    a, g, loo = (torch.tensor(v) for v in (scores.attention, scores.gradient, scores.loo))
    return {"attention vs gradient": kendall_tau(a, g), "attention vs loo": kendall_tau(loo, a), "gradient vs loo": kendall_tau(loo, g)}
