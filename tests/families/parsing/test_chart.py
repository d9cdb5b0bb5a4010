"""CKY over span scores (`families.parsing.chart.cky`) against brute force, trees <-> labelled spans, and
the margin loss (`chart.task.margin_loss`): zero when the gold tree wins by the margin."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch

from attnkit.families.parsing.chart.cky import build_tree, cky, gold_chart, gold_spans
from attnkit.families.parsing.chart.codec import fencepost_pairs
from attnkit.families.parsing.chart.task import margin_loss
from attnkit.families.parsing.trees import parse_trees


def bracketings(i: int, j: int):
    """Every binary bracketing of fenceposts i..j, as lists of spans."""
    if j - i == 1:
        yield [(i, j)]
        return
    for k in range(i + 1, j):
        for left in bracketings(i, k):
            for right in bracketings(k, j):
                yield [(i, j), *left, *right]


def brute_force(scores: np.ndarray, gold: np.ndarray | None = None) -> float:
    """max over bracketings of the sum over its spans of the best label (the root's non-empty), by enumeration."""
    n, n_labels = scores.shape[0] - 1, scores.shape[2]
    aug = scores + (np.arange(n_labels)[None, None, :] != gold[:, :, None]) if gold is not None else scores
    best = -np.inf
    for spans in bracketings(0, n):
        total = sum(aug[i, j, 1:].max() if (i, j) == (0, n) else aug[i, j].max() for i, j in spans)
        best = max(best, total)
    return best


def tree_score(scores: np.ndarray, spans) -> float:
    return sum(scores[i, j, label] for i, j, label in spans)


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("n", [1, 2, 3, 4, 5, 6])
def test_cky_finds_the_best_tree_of_brute_force(n, seed):
    rng = np.random.default_rng(seed * 10 + n)
    scores = rng.normal(size=(n + 1, n + 1, 4))
    scores[..., 0] = 0.0  # the empty label
    found = cky(scores)
    assert len(found.spans) == 2 * n - 1 and found.spans[0][:2] == (0, n) and found.spans[0][2] != 0
    assert found.score == pytest.approx(brute_force(scores)) == pytest.approx(tree_score(scores, found.spans))
    gold = rng.integers(0, 4, size=(n + 1, n + 1))
    augmented = cky(scores, gold)
    cost = sum(label != gold[i, j] for i, j, label in augmented.spans)
    assert augmented.cost == cost and augmented.score == pytest.approx(brute_force(scores, gold))
    assert augmented.score == pytest.approx(tree_score(scores, augmented.spans) + cost)


def test_cky_enumerating_labels_too_on_three_words():
    rng = np.random.default_rng(7)
    scores = rng.normal(size=(4, 4, 3))
    scores[..., 0] = 0.0
    best = -np.inf
    for spans in bracketings(0, 3):
        for labels in itertools.product(range(3), repeat=len(spans)):
            if labels[0] != 0:  # the root (first span) is labelled
                best = max(best, sum(scores[i, j, l] for (i, j), l in zip(spans, labels)))
    assert cky(scores).score == pytest.approx(best)


TREE = "(S (NP (DT the) (JJ big) (NN dog)) (VP (VBZ barks) (S (VP (TO to) (VP (VB go))))) (. .))"


def test_gold_spans_collapse_unary_chains_and_the_tree_comes_back():
    tree = parse_trees(TREE)[0]
    spans = gold_spans(tree)
    assert spans == [(0, 7, "S"), (0, 3, "NP"), (3, 6, "VP"), (4, 6, "S+VP"), (5, 6, "VP")]
    labels = ["", "NP", "S", "S+VP", "VP"]
    index = {label: i for i, label in enumerate(labels)}
    chart = gold_chart(7, [(i, j, index[label]) for i, j, label in spans])
    scores = np.where(np.arange(5)[None, None, :] == chart[:, :, None], 5.0, -1.0)
    scores[..., 0] = 0.0  # only the gold labels score: CKY finds the gold tree, binarised
    found = cky(scores)
    assert build_tree(found.spans, labels, tree.words(), tree.tags()) == tree


def test_a_single_word_is_a_labelled_tree():
    scores = np.zeros((2, 2, 3))
    scores[0, 1] = [0.0, -2.0, -1.0]  # the root must carry a label, even a worse one than empty
    found = cky(scores)
    assert found.spans == [(0, 1, 2)]
    assert str(build_tree(found.spans, ["", "NP", "S+NP"], ["dogs"], ["NNS"])) == "(S (NP (NNS dogs)))"


def loss_of(scores: np.ndarray, gold: np.ndarray) -> float:
    n = scores.shape[0] - 1
    pairs, table = fencepost_pairs(n)
    flat = torch.tensor(scores[pairs[:, 0].numpy(), pairs[:, 1].numpy()], dtype=torch.float32)[None]  # (1, P, L)
    return float(margin_loss(flat, [gold], [n], table))


def test_margin_loss_is_zero_when_the_gold_tree_wins_by_the_margin_and_positive_otherwise():
    tree = parse_trees(TREE)[0]
    labels = ["", "NP", "S", "S+VP", "VP"]
    index = {label: i for i, label in enumerate(labels)}
    gold = gold_chart(7, [(i, j, index[label]) for i, j, label in gold_spans(tree)])
    rng = np.random.default_rng(0)
    noise = rng.uniform(-0.2, 0.2, size=(8, 8, 5))
    wins = np.where(np.arange(5)[None, None, :] == gold[:, :, None], 1.5, -1.5) + noise
    wins[..., 0] = 0.0  # every gold span's label beats the rest by > 1 (the Hamming cost of a wrong one)
    assert loss_of(wins, gold) == 0.0
    barely = np.where(np.arange(5)[None, None, :] == gold[:, :, None], 0.5, -1.5) + noise
    barely[..., 0] = 0.0  # the gold tree still wins, but by less than the margin: the loss is positive
    assert cky(barely).spans == cky(wins).spans and loss_of(barely, gold) > 0
    random = rng.normal(size=(8, 8, 5))
    random[..., 0] = 0.0
    expected = cky(random, gold).score - sum(random[i, j, gold[i, j]] for i, j in zip(*np.nonzero(np.triu(gold, k=1))))
    assert loss_of(random, gold) == pytest.approx(max(expected, 0.0), abs=1e-4) and expected > 0


def test_margin_loss_gradient_is_predicted_minus_gold():
    gold = gold_chart(2, [(0, 2, 1)])  # (L1 w1 w2): the one-word spans are no constituents
    pairs, table = fencepost_pairs(2)
    flat = torch.zeros(1, len(pairs), 3, requires_grad=True)  # all scores 0: the Hamming cost alone decides
    loss = margin_loss(flat, [gold], [2], table)
    loss.backward()
    assert loss.item() == 3.0  # every span of the augmented best tree has a wrong label: the root 2, each word 1
    grad = flat.grad[0]
    assert grad[table[0, 2]].tolist() == [0.0, -1.0, 1.0]  # the predicted root label up, the gold one down
    assert grad[table[0, 1]].tolist() == grad[table[1, 2]].tolist() == [0.0, 1.0, 0.0]
