"""The right-branching baseline, and its score on the sample's dev files under COLLINS.prm."""

from __future__ import annotations

import pytest

from attnkit.errors import DataError
from attnkit.families.parsing.baseline import right_branching
from attnkit.families.parsing.evalb import score
from attnkit.families.parsing.evalb_params import COLLINS
from attnkit.families.parsing.trees import parse_trees, spans


def test_shape():
    assert str(right_branching(["a"])) == "(S (XX a))"
    assert str(right_branching(["a", "b"], ["DT", "NN"])) == "(S (DT a) (NN b))"
    tree = right_branching(["a", "b", "c", "d"])
    assert str(tree) == "(S (XX a) (S (XX b) (S (XX c) (XX d))))"
    assert spans(tree) == [("S", 0, 4), ("S", 1, 4), ("S", 2, 4)]
    with pytest.raises(DataError, match="2 tags for 3 words"):
        right_branching(["a", "b", "c"], ["DT", "NN"])


def test_score_by_hand():
    # COLLINS.prm deletes "." with its word (README 6.4), so over "the dog barks" the gold brackets
    # are S[0,3) NP[0,2) VP[2,3) and the baseline's S[0,4) S[1,4) S[2,4) become S[0,3) S[1,3)
    # S[2,3): only S[0,3) matches (S[2,3) has VP's span but not its label), and S[1,3) crosses
    # NP[0,2) (README 4 vii).
    (gold,) = parse_trees("(S (NP (DT the) (NN dog)) (VP (VBZ barks)) (. .))")
    row = score([gold], [right_branching(gold.words(), gold.tags())], COLLINS).rows[0]
    assert (row.gold_brackets, row.test_brackets, row.matched, row.crossing) == (3, 3, 1, 1)


def test_right_branching_on_the_dev_files(splits):
    dev = splits["dev"]  # wsj_0180-0189 after preprocessing: 127 trees
    test = [right_branching(tree.words(), tree.tags()) for tree in dev]
    summary = score(dev, test, COLLINS).summary()["all"]
    # Regression values of this scorer (reported with the branch): 220 of 2,305 gold and 2,930
    # test brackets match, labelled F1 8.40; tags are the gold ones, so tagging is 100%.
    assert (summary["valid_sentences"], summary["matched"], summary["gold_brackets"], summary["test_brackets"]) == (127, 220, 2305, 2930)
    assert round(summary["fmeasure"], 2) == 8.40 and summary["tagging_accuracy"] == 100.0
