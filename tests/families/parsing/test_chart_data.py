"""The chart parser's training data: word dropout (a word of training count c is read as unknown
with probability alpha / (alpha + c)) and `data.train_fraction` (the first part of the training
trees, for the data-efficiency study)."""

from __future__ import annotations

from pathlib import Path

import torch

from attnkit.data.vocab import UNK
from attnkit.families import load_config
from attnkit.families.parsing.chart.codec import ChartExample, build_chart_vocabs, drop_words, unknown_ids
from attnkit.families.parsing.chart.task import load_data
from attnkit.families.parsing.task import read_splits
from attnkit.families.parsing.trees import parse_trees

TREES = ["(S (NP (NNP Pierre) (NNP Vinken)) (VP (VBD joined)) (. .))", "(S (NP (NNP Smith) (NNP Vinken)) (VP (VBD joined)) (. .))"]


def test_unknown_ids_are_signatures_or_unk():
    trees = [parse_trees(t)[0] for t in TREES]
    with_signatures = build_chart_vocabs(trees, min_freq=2, signatures=True)
    words = ["Vinken", "Pierre", "walks"]
    ids = unknown_ids(with_signatures, words)
    assert ids[:2] == [with_signatures.words.encode(["<unk-Xx>"])[0]] * 2 and ids[0] != UNK  # Pierre and Smith are rare: <unk-Xx> is trained
    assert ids[2] == UNK  # <unk-x> was never seen
    assert unknown_ids(build_chart_vocabs(trees, min_freq=1, signatures=False), words) == [UNK] * 3


def test_word_dropout_replaces_a_word_with_probability_alpha_over_alpha_plus_count():
    torch.manual_seed(0)
    n = 4000
    example = ChartExample([7] * n, [[5]] * n, [], [])
    for alpha, count in ((1.0, 1), (1.0, 3), (0.5, 1)):
        dropped = drop_words(example, [1] * n, [count] * n, alpha).words
        assert set(dropped) <= {1, 7}
        share, expected = dropped.count(1) / n, alpha / (alpha + count)
        assert abs(share - expected) < 0.03, (alpha, count, share)
    assert drop_words(example, [1] * n, [1] * n, 1e9).words == [1] * n
    assert example.words == [7] * n  # the example itself is left alone


def test_word_dropout_draws_from_torchs_generator_so_a_resumed_run_draws_the_same():
    example = ChartExample([7] * 50, [[5]] * 50, [], [])
    torch.manual_seed(3)
    first = drop_words(example, [1] * 50, [1] * 50, 1.0).words
    torch.manual_seed(3)
    assert drop_words(example, [1] * 50, [1] * 50, 1.0).words == first


def test_train_fraction_keeps_the_first_training_trees_and_the_cache_tells_fractions_apart(tmp_path: Path):
    tb = tmp_path / "tb"
    tb.mkdir()
    trees = [f"( (S (NP (NN w{i})) (VP (VBZ x)) (. .)) )" for i in range(8)]
    (tb / "wsj_0001.mrg").write_text("\n".join(trees[:4]) + "\n", encoding="utf-8")
    (tb / "wsj_0002.mrg").write_text("\n".join(trees[4:]) + "\n", encoding="utf-8")
    (tb / "wsj_0180.mrg").write_text(trees[0] + "\n", encoding="utf-8")
    loaded = {}
    for fraction in (1.0, 0.25, 0.5):
        config = tmp_path / f"c{fraction}.yaml"
        config.write_text(f"task: parsing\ndata: {{treebank: {tb}, min_freq: 1, train_fraction: {fraction}}}\n"
                          "model: {kind: chart, layers: 1, d_model: 16, n_heads: 2, d_kv: 8, d_ff: 16, word_dropout_alpha: 1.0}\n"
                          "train: {max_steps: 1}\n")  # fmt: skip
        run = load_config(config)
        words = [t.words()[0] for t in read_splits(run, tb)["train"]]
        assert words == [f"w{i}" for i in range(round(8 * fraction))]
        loaded[fraction] = load_data(run, tmp_path / "runs" / "r", None)
    assert [len(d.train) for d in loaded.values()] == [8, 2, 4]
    assert loaded[0.25].train_counts == [[1, 2, 2], [1, 2, 2]]  # counted in the kept trees: w_i once, x and . twice
