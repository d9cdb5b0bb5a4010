"""The chart parser's model (`families.parsing.chart.model`): the factored attention keeps content and
position apart as specified, fencepost spans are [f_j - f_i ; b_{i+1} - b_{j+1}], and an untrained
parser's output is always one tree over exactly the input words."""

from __future__ import annotations

import random

import pytest
import torch

from attnkit.config.schema import Decode
from attnkit.families.parsing.chart.codec import build_chart_vocabs, fencepost_pairs
from attnkit.families.parsing.chart.infer import parse_chart
from attnkit.families.parsing.chart.model import FactoredAttention, FactoredLayer
from attnkit.families.parsing.chart.task import build
from attnkit.families.parsing.config import ChartModel, ParseRun
from attnkit.families.parsing.trees import parse_trees

DC, DP, H, DKV = 12, 8, 2, 6  # content and position widths differ, to catch a swapped partition


def attention() -> FactoredAttention:
    torch.manual_seed(0)
    return FactoredAttention(DC, DP, H, DKV).eval()


def test_factored_attention_shapes_and_weights():
    x, keep = torch.randn(3, 5, DC + DP), torch.tensor([[True] * 5, [True] * 3 + [False] * 2, [True] + [False] * 4])
    out, weights = attention()(x, keep)
    assert out.shape == (3, 5, DC + DP) and weights.shape == (3, H, 5, 5)
    torch.testing.assert_close(weights.sum(-1), torch.ones(3, H, 5))
    assert (weights[1, :, :, 3:] == 0).all() and (weights[2, :, :, 1:] == 0).all()  # padding gets no weight
    parts = attention().project(x)
    assert all(p.shape == (3, H, 5, DKV // 2) for p in parts)


def test_content_projections_read_only_content_and_position_ones_only_position():
    module, x = attention(), torch.randn(2, 4, DC + DP)
    moved_position, moved_content = x.clone(), x.clone()
    moved_position[..., DC:] += torch.randn(2, 4, DP)
    moved_content[..., :DC] += torch.randn(2, 4, DC)
    base = module.project(x)
    for a, b in zip(base[:3], module.project(moved_position)[:3]):  # q_c, k_c, v_c
        torch.testing.assert_close(a, b)
    for a, b in zip(base[3:], module.project(moved_content)[3:]):  # q_p, k_p, v_p
        torch.testing.assert_close(a, b)
    assert not torch.allclose(base[0], module.project(moved_content)[0])  # and each does read its own half


def test_logits_are_content_dot_content_plus_position_dot_position():
    module, x = attention(), torch.randn(2, 4, DC + DP)
    content, position = module.logits(x)
    only_content, _ = module.logits(torch.cat([x[..., :DC], torch.zeros(2, 4, DP)], dim=-1))
    _, only_position = module.logits(torch.cat([torch.zeros(2, 4, DC), x[..., DC:]], dim=-1))
    torch.testing.assert_close(content, only_content)
    torch.testing.assert_close(position, only_position)
    expected = torch.softmax(content + position, dim=-1)
    torch.testing.assert_close(module(x, torch.ones(2, 4, dtype=torch.bool))[1], expected)


def test_with_the_weights_fixed_each_output_half_reads_only_its_own_input_half():
    # one token attends only to itself (weight 1 whatever the logits): the content half of the output
    # is then a function of the content input alone, the position half of the position input alone
    module, keep = attention(), torch.ones(4, 1, dtype=torch.bool)
    x = torch.randn(4, 1, DC + DP)
    moved_position, moved_content = x.clone(), x.clone()
    moved_position[..., DC:] = torch.randn(4, 1, DP)
    moved_content[..., :DC] = torch.randn(4, 1, DC)
    out = module(x, keep)[0]
    torch.testing.assert_close(module(moved_position, keep)[0][..., :DC], out[..., :DC])
    torch.testing.assert_close(module(moved_content, keep)[0][..., DC:], out[..., DC:])
    assert not torch.allclose(module(moved_position, keep)[0][..., DC:], out[..., DC:])
    # and a whole layer (attention, feed-forward and layer norm all per partition) keeps that
    torch.manual_seed(1)
    layer = FactoredLayer(DC, DP, H, DKV, 16, dropout=0.0, attention_dropout=0.0, relu_dropout=0.0).eval()
    torch.testing.assert_close(layer(moved_position, keep)[0][..., :DC], layer(x, keep)[0][..., :DC])
    torch.testing.assert_close(layer(moved_content, keep)[0][..., DC:], layer(x, keep)[0][..., DC:])


TREES = parse_trees("(S (NP (DT the) (NN dog)) (VP (VBZ barks)) (. .)) (S (NP (PRP it)) (VP (VBD saw) (NP (DT a) (NN cat)))) (FRAG (RB no) (. .))")


def chart_parser(d_model: int = 16):
    vocabs = build_chart_vocabs(TREES, min_freq=1, signatures=True)
    run = ParseRun(task="parsing", train={"max_steps": 1},
                   model=ChartModel(kind="chart", layers=2, d_model=d_model, n_heads=2, d_kv=8, d_ff=16, d_label_hidden=8, max_positions=40))  # fmt: skip
    torch.manual_seed(0)
    return build(run, vocabs).eval(), vocabs


def test_fencepost_spans_are_forward_and_backward_differences():
    model, _ = chart_parser()
    y = torch.randn(1, 5, 16)  # <s> w1 w2 w3 </s>: fenceposts 0..3
    pairs, table = fencepost_pairs(3)
    scores = model.span_scores(y, pairs)  # (1, P, L)
    f, b = y[0, :, 0::2], y[0, :, 1::2]
    i, j = 1, 3
    r = torch.cat([f[j] - f[i], b[i + 1] - b[j + 1]])
    expected = model.label_mlp(r)
    torch.testing.assert_close(scores[0, table[i, j], 1:], expected)
    assert (scores[..., 0] == 0).all()


@pytest.mark.parametrize("seed", range(3))
def test_an_untrained_chart_parser_gives_one_tree_over_the_words(seed):
    model, vocabs = chart_parser()
    rng = random.Random(seed)
    pool = ["the", "dog", "barks", ".", "Unseen", "words-too", "1987", "é", "saw", ","]
    sentences = [[rng.choice(pool) for _ in range(n)] for n in [1, 2, 3, 2, 1, 7, 12, 30]]
    results = parse_chart(model, vocabs, sentences, Decode(batch_size=3), return_attention=True)
    for words, r in zip(sentences, results):
        assert r.tree.words() == words and len(r.tree.tags()) == len(words)
        assert not r.tree.is_preterminal and r.tree.label in {label.split("+")[0] for label in vocabs.labels[1:]}
        assert parse_trees(str(r.tree))[0] == r.tree  # prints and reads back as one tree
        assert r.chart is not None and r.chart.best.shape == (len(words) + 1, len(words) + 1)
        assert r.maps is not None and r.maps[0].shape == (2, len(words) + 2, len(words) + 2)
