"""Every attention map of a translation: shapes, agreement with the search, word merging."""

from __future__ import annotations

import pytest
import torch

from attnkit.families import load_run
from attnkit.families.translation.api import result as served
from attnkit.families.translation.explore import ExploredTranslation, explore, explore_decode, merge_matrix, merge_words, word_groups
from attnkit.families.translation.translate import Translation
from attnkit.viz.attention_view import AttentionView


def test_maps_match_the_search_and_have_the_sentence_shapes(tiny_transformer_run):
    loaded = load_run(tiny_transformer_run)
    lines = ["t1 t2 t3 t4 t5", "t6"]  # different lengths: the batch is padded
    for e in explore(loaded, lines, explore_decode(loaded.run.decode, beam=2)):
        best = e.nbest[0]
        S, T = len(best.src_pieces), len(best.tgt_pieces)
        views = {v.kind: v for v in e.views}
        assert [w.shape for w in views["encoder"].layers] == [(2, S, S)] * 2
        assert [w.shape for w in views["decoder_self"].layers] == [(2, T, T)] * 2
        assert [w.shape for w in views["cross"].layers] == [(2, T, S)] * 2
        assert views["decoder_self"].cols == ["<s>"] + best.tgt_pieces[:-1] and views["cross"].rows == best.tgt_pieces
        for v in e.views:
            torch.testing.assert_close(v.layers[-1].sum(-1), torch.ones(2, len(v.rows)))
        assert torch.triu(views["decoder_self"].layers[0], diagonal=1).abs().max() == 0  # causal
        # The teacher-forced pass repeats the search: its last cross layer, averaged over heads, is
        # the attention the beam search recorded step by step.
        torch.testing.assert_close(views["cross"].layers[-1].mean(0), best.attention, atol=1e-5, rtol=0)


def test_merge_words_sums_keys_and_averages_queries():
    pieces = ["\u2581A", "\u2581bi", "cy", "cle", ".", "</s>"]
    assert word_groups(pieces) == [[0], [1, 2, 3, 4], [5]]
    assert word_groups(["<s>", "\u2581Ein", "er"]) == [[0], [1, 2]]
    weights = torch.tensor([[0.1, 0.2, 0.3, 0.4], [0.5, 0.5, 0.0, 0.0], [1.0, 0.0, 0.0, 0.0]])  # (3, 4)
    merged = merge_matrix(weights, [[0], [1, 2]], [[0, 1], [2, 3]])
    # Row 0 keeps its own row, keys summed: 0.1+0.2, 0.3+0.4; row 1 averages rows 1 and 2: (1.0+1.0)/2, 0.
    torch.testing.assert_close(merged, torch.tensor([[0.3, 0.7], [1.0, 0.0]]))


def test_merge_words_in_an_explanation():
    src, tgt = ["\u2581a", "b", "\u2581c", "</s>"], ["\u2581x", "y", "</s>"]
    cross = torch.tensor([[0.5, 0.5, 0.0, 0.0], [0.0, 0.0, 1.0, 0.0], [0.0, 0.0, 0.0, 1.0]])  # (T, S)
    best = Translation("xy", -1.0, -1.0, True, src, tgt, cross)
    e = merge_words(ExploredTranslation(0, "ab c", [best], [AttentionView("cross", tgt, src, [cross[None]], "cross", ("source", "output"))]))
    assert (e.nbest[0].src_pieces, e.nbest[0].tgt_pieces) == (["ab", "c", "</s>"], ["xy", "</s>"])
    torch.testing.assert_close(e.nbest[0].attention, torch.tensor([[0.5, 0.5, 0.0], [0.0, 0.0, 1.0]]))
    assert served(e)["maps"]["cross"] == {"title": "cross", "role": "input", "rows": ["xy", "</s>"], "cols": ["ab", "c", "</s>"],
                                          "layers": [[[[0.5, 0.5, 0.0], [0.0, 0.0, 1.0]]]]}  # fmt: skip


def test_nbest_larger_than_beam_is_an_error(tiny_transformer_run):
    from attnkit.errors import AttnkitError

    with pytest.raises(AttnkitError, match=r"nbest \(3\) must be <= beam \(2\)"):
        explore_decode(load_run(tiny_transformer_run).run.decode, beam=2, nbest=3)
