"""Faithfulness of a token ranking: what the model does when the tokens it ranks first are taken away.

An explanation method gives each of the T input tokens a score; the tokens ranked by score (highest
first, ties by position) are removed in that order. `predict` says how likely the explained output y
(the predicted class, or an output token) stays: keep (N, T) bool -> p(y | x with the tokens where
keep is False removed) (N,). How a token is removed is the source's choice (`attnkit.sources.scored`
says which and why); these functions only choose which tokens.

ERASER (DeYoung et al. 2020, sec. 4.2; their scorer, `rationale_benchmark/metrics.py`,
`_instances_aopc`), with x_k the top k tokens of the ranking:

    comprehensiveness_k = p(y | x) - p(y | x without x_k)    high: the top tokens were needed
    sufficiency_k       = p(y | x) - p(y | x_k only)          low: the top tokens were enough

each as AOPC (Samek et al. 2017), the mean over the bins k_d = 1, 5, 10, 20, 50% of the tokens
(`FRACTIONS`). A bin takes k = ceil(d T) tokens, at least one for d > 0 (ERASER leaves the rounding to
the caller). A random ranking is the floor every method should beat (`random_scores`).

The deletion curve (Samek et al. 2017's "most relevant first"; Petsiuk et al. 2018's deletion
metric) is p(y | x without the top ceil(d T) tokens) at d = 0, 0.1, ..., 1 (`CURVE`); its area,
by the trapezoid rule over d in [0, 1], is low when the first tokens removed are the ones the
output depended on. Leave-one-out (Jain & Wallace 2019, sec. 4.1; Abnar & Zuidema 2020's input
blanking) scores token i by p(y | x) - p(y | x without token i).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import torch
from torch import Tensor

from attnkit.errors import AttnkitError

FRACTIONS = (0.01, 0.05, 0.10, 0.20, 0.50)  # ERASER's AOPC bins
CURVE = tuple(i / 10 for i in range(11))  # the deletion curve's points: share of the tokens removed

Predict = Callable[[Tensor], Tensor]  # keep (N, T) bool -> p(y | the kept tokens) (N,)


def top_k(fraction: float, n: int) -> int:
    """ceil(fraction * n) tokens, computed without float noise (0.07 * 100 is 7, not 8)."""
    if not 0.0 <= fraction <= 1.0:
        raise AttnkitError(f"faithfulness: a share of the tokens must be in [0, 1], got {fraction}")
    return math.ceil(round(fraction * n, 9))


def ranking(scores: Tensor) -> Tensor:
    """Token positions (T,) from the highest score to the lowest; equal scores keep their order."""
    scores = torch.as_tensor(scores).detach().to("cpu", torch.float64).reshape(-1)  # (T,)
    if torch.isnan(scores).any():
        raise AttnkitError("faithfulness: a ranking's scores hold NaN")
    return torch.sort(scores, descending=True, stable=True).indices  # (T,)


def random_scores(n: int, seed: int) -> Tensor:
    """Scores (n,) for a random ranking, the same for the same seed."""
    return torch.rand(n, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)  # (n,)


def top_masks(order: Tensor, counts: Sequence[int]) -> Tensor:
    """(len(counts), T) bool: row j is True on the first counts[j] positions of `order`."""
    rank = torch.empty_like(order)
    rank[order] = torch.arange(order.numel())  # (T,): each position's place in the ranking
    return rank.unsqueeze(0) < torch.tensor(list(counts)).unsqueeze(1)  # (K, T)


@dataclass(frozen=True)
class Faithfulness:
    """One ranking's figures: per bin (K,) and per curve point (P,), with their summaries."""

    comprehensiveness: list[float]  # p(y|x) - p(y|x without the top k), per bin
    sufficiency: list[float]  # p(y|x) - p(y|top k only), per bin
    curve: list[float]  # p(y | x without the top ceil(d T)), per curve point d

    @property
    def comprehensiveness_aopc(self) -> float:
        return sum(self.comprehensiveness) / len(self.comprehensiveness)

    @property
    def sufficiency_aopc(self) -> float:
        return sum(self.sufficiency) / len(self.sufficiency)


def deletion_area(curve: Sequence[float], points: Sequence[float] = CURVE) -> float:
    """The area under the deletion curve over the share removed (trapezoid rule)."""
    if len(curve) != len(points) or len(points) < 2:
        raise AttnkitError(f"faithfulness: a deletion curve of {len(curve)} values for {len(points)} points")
    return float(torch.trapezoid(torch.tensor(curve, dtype=torch.float64), torch.tensor(points, dtype=torch.float64)))


def faithfulness(predict: Predict, scores: Tensor, p: float, fractions: Sequence[float] = FRACTIONS, points: Sequence[float] = CURVE) -> Faithfulness:
    """Comprehensiveness and sufficiency per bin and the deletion curve of the ranking of `scores` (T,).

    Args:
        predict: keep (N, T) bool -> p(y | kept tokens) (N,); called once, with every distinct mask in one batch
            (on short inputs several bins take the same k).
        scores: (T,) the method's token scores (higher: ranked first).
        p: p(y | x), all tokens kept.
        fractions: the AOPC bins, shares of the tokens.
        points: the deletion curve's shares of the tokens removed.
    """
    return faithfulness_of_rankings(predict, {"": scores}, p, fractions, points)[""]


def faithfulness_of_rankings(predict: Predict, scores: Mapping[str, Tensor], p: float, fractions: Sequence[float] = FRACTIONS,
                             points: Sequence[float] = CURVE) -> dict[str, Faithfulness]:  # fmt: skip
    """`faithfulness` of several rankings of the same T tokens (name -> scores (T,)), with one call of `predict`:
    the masks of every ranking in one batch, each distinct mask once (the rankings share the input with no
    token and, on short inputs or where they agree, many more)."""
    if not scores:
        return {}
    k, per = len(fractions), 2 * len(fractions) + len(points)
    rows = []
    for s in scores.values():
        order = ranking(s)  # (T,)
        n = order.numel()
        bins = top_masks(order, [top_k(d, n) for d in fractions])  # (K, T)
        curve = top_masks(order, [top_k(d, n) for d in points])  # (P, T)
        rows.append(torch.cat([~bins, bins, ~curve]))  # (2K + P, T)
    masks, inverse = torch.unique(torch.cat(rows), dim=0, return_inverse=True)  # (M, T): each input once
    probs = predict(masks).detach().to("cpu", torch.float64)[inverse].view(len(rows), per)  # (R, 2K + P)
    return {name: Faithfulness((p - q[:k]).tolist(), (p - q[k : 2 * k]).tolist(), q[2 * k :].tolist()) for name, q in zip(scores, probs)}


def leave_one_out(predict: Predict, n: int, p: float) -> Tensor:
    """p(y | x) - p(y | x without token i) for each of the n tokens: (n,)."""
    keep = ~torch.eye(n, dtype=torch.bool)  # (n, n): row i drops token i
    return p - predict(keep).detach().to("cpu", torch.float64)  # (n,)


FERRET_FRACTIONS = tuple(i / 10 for i in range(1, 11))  # ferret's default `thresholds`: 10%, 20%, ..., 100% of the tokens


def ferret_aopc(predict: Predict, scores: Tensor, p: float, fractions: Sequence[float] = FERRET_FRACTIONS) -> tuple[float, float]:
    """(comprehensiveness, sufficiency) AOPC as ferret-xai's evaluators compute them with their defaults
    (`ferret/evaluators/faithfulness_measures.py`, `utils_from_soft_to_discrete.py`: `based_on="perc"`, `only_pos=True`).

    Where this differs from `faithfulness`: a bin takes k = floor(d T) tokens (none: the bin is skipped); of the top
    k only those scored above 0 form the rationale (none: skipped); a rationale equal to the previous bin's is
    skipped; the AOPC is the mean over the bins left, and with none left comprehensiveness is 0 and sufficiency 1.
    How tokens are removed stays the `predict`'s choice (ferret deletes them: `sources.hf.scored.deleted_predict`).
    """
    return ferret_aopc_of_rankings(predict, {"": scores}, p, fractions)[""]


def ferret_rationales(scores: Tensor, fractions: Sequence[float]) -> list[Tensor]:
    """The rationales (T,) bool of one ranking that `ferret_aopc` averages over, in bin order (its docstring)."""
    order = ranking(scores)  # (T,)
    n = order.numel()
    positive = torch.as_tensor(scores).detach().to("cpu", torch.float64).reshape(-1) > 0  # (T,)
    rationales: list[Tensor] = []
    for d in fractions:
        k = math.floor(round(d * n, 9))
        rationale = top_masks(order, [k])[0] & positive  # (T,)
        if k == 0 or not rationale.any() or (rationales and torch.equal(rationale, rationales[-1])):
            continue
        rationales.append(rationale)
    return rationales


def ferret_aopc_of_rankings(predict: Predict, scores: Mapping[str, Tensor], p: float,
                            fractions: Sequence[float] = FERRET_FRACTIONS) -> dict[str, tuple[float, float]]:  # fmt: skip
    """`ferret_aopc` of several rankings of the same T tokens (name -> scores (T,)), with one call of `predict`: the
    inputs of every bin of every ranking (the text without each rationale, and each rationale alone) in one batch,
    each distinct input once (as `faithfulness_of_rankings`)."""
    rationales = {name: ferret_rationales(s, fractions) for name, s in scores.items()}
    rows = [torch.cat([~torch.stack(r), torch.stack(r)]) for r in rationales.values() if r]  # (2R, T) each
    if not rows:
        return {name: (0.0, 1.0) for name in scores}
    masks, inverse = torch.unique(torch.cat(rows), dim=0, return_inverse=True)  # (M, T): each input once
    probs = predict(masks).detach().to("cpu", torch.float64)[inverse]  # (sum of 2R,)
    out, start = {}, 0
    for name, r in rationales.items():
        if not r:
            out[name] = (0.0, 1.0)
            continue
        q, start = probs[start : start + 2 * len(r)], start + 2 * len(r)  # (2R,): without each rationale, then each alone
        out[name] = (float((p - q[: len(r)]).mean()), float((p - q[len(r) :]).mean()))
    return out
