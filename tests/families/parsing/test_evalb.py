"""The EVALB scorer: EVALB's own sample reproduced exactly, and COLLINS.prm on hand-made cases.

Expected values come from `sample.rsl` (EVALB's output on its sample, shared/data README 6) and,
for the hand-made cases, from the rules in EVALB's README, section by section as noted.
"""

from __future__ import annotations

import dataclasses
import re

import pytest

from attnkit.errors import ConfigError, DataError
from attnkit.families.parsing.evalb import ERROR, OK, SKIP, score, score_files
from attnkit.families.parsing.evalb_params import (
    COLLINS,
    EvalbParams,
    parse_params,
    read_params,
)
from attnkit.families.parsing.trees import parse_trees

SUMMARY_KEYS = {
    "Number of sentence": "sentences",
    "Number of Error sentence": "error_sentences",
    "Number of Skip  sentence": "skip_sentences",
    "Number of Valid sentence": "valid_sentences",
    "Bracketing Recall": "recall",
    "Bracketing Precision": "precision",
    "Complete match": "complete_match",
    "Average crossing": "average_crossing",
    "No crossing": "no_crossing",
    "2 or less crossing": "two_or_less_crossing",
    "Tagging accuracy": "tagging_accuracy",
}


@pytest.fixture(scope="module")
def sample(evalb_dir):
    params = read_params(evalb_dir / "sample.prm")
    return score_files(evalb_dir / "sample.gld", evalb_dir / "sample.tst", params), (evalb_dir / "sample.rsl").read_text()


def test_sample_report_is_reproduced_byte_for_byte(sample):
    report, rsl = sample
    assert report.format_table() == rsl


def test_sample_summary_figures(sample):
    report, rsl = sample
    blocks = re.split(r"\n-- (All|len<=40) --\n", rsl)
    summary = report.summary()
    for title, text in zip(blocks[1::2], blocks[2::2]):
        expected = dict(re.findall(r"^(.+?)\s+=\s+(\S+)$", text, re.MULTILINE))
        assert len(expected) == 11  # sample.rsl (EVALB 1997) has no FMeasure line
        ours = summary["all" if title == "All" else "len<=40"]
        for name, value in expected.items():
            got = ours[SUMMARY_KEYS[name.strip()]]
            assert (str(got) if isinstance(got, int) else "%.2f" % got) == value, (title, name)
    assert summary["all"]["fmeasure"] == pytest.approx(2 * 87.755 * 90.526 / (87.755 + 90.526), abs=1e-2)


def test_sample_sentence_rows(sample):
    report, rsl = sample
    lines = [line.split() for line in rsl.splitlines()[3:27]]
    assert len(lines) == len(report.rows) == 24
    for row, fields in zip(report.rows, lines):
        ints = [int(fields[i]) for i in (0, 1, 2, 5, 6, 7, 8, 9, 10)]
        assert ints == [row.id, row.length, row.status, row.matched, row.gold_brackets, row.test_brackets, row.crossing, row.words, row.correct_tags]
        assert ["%.2f" % v for v in (row.recall, row.precision, row.tag_accuracy)] == [fields[3], fields[4], fields[11]]
    # why sentences 11-20 were left out (EVALB prints these on stderr)
    assert {r.id: r.errors for r in report.rows if r.status != OK} == {
        11: (),
        12: ("Words unmatch (is|was)",),
        13: ("Length unmatch (4|5)",),
        14: (),
        16: ("Length unmatch (4|5)",),
        17: ("Length unmatch (4|6)",),
        20: ("Words unmatch (this|That)",),
    }


def test_trees_and_lines_score_alike(evalb_dir):
    gold = (evalb_dir / "sample.gld").read_text().splitlines()
    test = (evalb_dir / "sample.tst").read_text().splitlines()
    params = read_params(evalb_dir / "sample.prm")
    as_trees = [parse_trees(line)[0] if line.count("(S") else line for line in test]  # line 8 is a forest
    assert score([parse_trees(g)[0] for g in gold], as_trees, params) == score(gold, test, params)


def test_the_2006_layout_adds_fmeasure(sample):
    report, _ = sample
    table = report.format_table(style="2006")
    assert table.count("Bracketing FMeasure       =  89.12\n") == 1  # 2PR/(P+R), P 90.53, R 87.76
    assert "Bracketing FMeasure       =  83.20\n" in table  # len<=40: P 85.25, R 81.25
    assert "  11    4    2    0.00   0.00     0      0    0      0      0     0     0.00\n" in table
    assert "                 87.76  90.53     86    98    95      1    108   106    98.15\n" in table


def test_parameter_files(evalb_dir):
    sample_params = read_params(evalb_dir / "sample.prm")
    assert sample_params == EvalbParams(
        delete_labels=("TOP", "-NONE-", ",", ":", "``", "''"),
        delete_labels_for_length=("-NONE-",),
        eq_labels=(("T", "TT"),),
        eq_words=(("This", "this"),),
    )
    assert read_params(evalb_dir / "COLLINS.prm") == COLLINS  # the constant is COLLINS.prm
    for text, message in [
        ("MAX_ERROR ten", "p.prm, line 1: MAX_ERROR needs an integer"),
        ("# comment\nEQ_LABEL ADVP", "p.prm, line 2: EQ_LABEL requires two values, got 1"),
        ("DELETE_LABELS TOP", "p.prm, line 1: unknown keyword 'DELETE_LABELS'"),
        ("\nDEBUG", "p.prm, line 2: DEBUG has no value"),
    ]:
        with pytest.raises(ConfigError, match=re.escape(message)):
            parse_params(text, "p.prm")
    assert parse_params("LABELED 0\nQUOTE_LABEL POS\nCUTOFF_LEN\t100\n").labeled is False


def one(gold: str, test: str, params: EvalbParams = COLLINS):
    """Score a single sentence pair; its row."""
    return score([gold], [test], params).rows[0]


def test_collins_punctuation_is_deleted_with_its_word():
    # README 6.4 / 7.1: with DELETE_LABEL . the word "." goes, so VP spans "barks" on both sides;
    # the length for the cut-off still counts it (7.4): 4 words, 3 kept; 3 brackets each, all match.
    gold = "(S (NP (DT The) (NN dog)) (VP (VBZ barks)) (. .))"
    test = "(S (NP (DT The) (NN dog)) (VP (VBZ barks) (. .)))"
    row = one(gold, test)
    assert (row.length, row.words, row.gold_brackets, row.test_brackets, row.matched) == (4, 3, 3, 3, 3)
    # sample.prm keeps "." (not a DELETE_LABEL there): VP is [2,3) against [2,4): 2 of 3 match
    assert one(gold, test, dataclasses.replace(COLLINS, delete_labels=COLLINS.delete_labels[:-1])).matched == 2


def test_collins_advp_equals_prt():
    # README 6.6: EQ_LABEL ADVP PRT, both ways: S, NP, VP and PRT = ADVP all match; without it
    # the particle bracket does not.
    gold, test = "(S (NP (PRP He)) (VP (VBD gave) (PRT (RP up))))", "(S (NP (PRP He)) (VP (VBD gave) (ADVP (RP up))))"
    assert (one(gold, test).matched, one(test, gold).matched) == (4, 4)
    assert one(gold, test, dataclasses.replace(COLLINS, eq_labels=())).matched == 3


def test_collins_function_tags_are_removed():
    # README 7.2: NP-SBJ-1 -> NP, NP=2 -> NP, on either side; POS tags are compared as they are.
    row = one("(S (NP-SBJ-1 (PRP He)) (VP (VBD left) (NP=2 (NN town))))", "(S (NP (PRP He)) (VP-TMP (VBD left) (NP (NN town))))")
    assert (row.gold_brackets, row.matched, row.correct_tags) == (4, 4, 3)


def test_collins_repeated_spans_match_n_against_m():
    # README 7.5: n gold and m test copies of one labelled span. Gold: S, NP, NP, VP (n = 2).
    gold = "(S (NP (NP (NN dog))) (VP (VBZ barks)))"
    more = one(gold, "(S (NP (NP (NP (NN dog)))) (VP (VBZ barks)))")  # m = 3 > n: precision n/m on it
    assert (more.matched, more.gold_brackets, more.test_brackets, more.recall, more.precision) == (4, 4, 5, 100.0, 80.0)
    fewer = one(gold, "(S (NP (NN dog)) (VP (VBZ barks)))")  # m = 1 < n: recall m/n on it
    assert (fewer.matched, fewer.recall, fewer.precision) == (3, 75.0, 100.0)


def test_collins_length_mismatch_is_an_error_sentence_left_out_of_the_scores():
    # README 4 ii-iii: error and skip sentences are counted, then ignored; valid = 3 - 1 - 1.
    gold = ["(S (NP (NN dog)) (VP (VBZ barks)))"] * 3
    test = ["(S (NP (NN dog)) (VP (VBZ barks) (ADVP (RB loudly))))", "", "(S (NN dog) (VP (VBZ barks)))"]
    report = score(gold, test, COLLINS)
    assert [r.status for r in report.rows] == [ERROR, SKIP, OK]
    assert report.rows[0].errors == ("Length unmatch (2|3)",)
    block = report.summary()["all"]
    assert (block["sentences"], block["error_sentences"], block["skip_sentences"], block["valid_sentences"]) == (3, 1, 1, 1)
    assert (block["gold_brackets"], block["matched"], block["recall"], block["precision"]) == (3, 2, 200 / 3, 100.0)


def test_crossing_brackets_are_counted_on_the_test_side():
    # README 4 vii: test B [1,3) overlaps gold A [0,2) without nesting: 1 crossing; S matches.
    row = one("(S (A (P a) (Q b)) (R c))", "(S (P a) (B (Q b) (R c)))", EvalbParams())
    assert (row.crossing, row.matched, row.gold_brackets, row.test_brackets) == (1, 1, 2, 2)


def test_quote_labels_put_a_deleted_quote_back():
    # EVALB 2006 README: a quote tagged with a deleted label on one side only is reinserted.
    params = dataclasses.replace(COLLINS, quote_labels=("``", "''", "POS"))
    gold, test = "(S (NP (NNP John) (POS ')) (VP (VBZ runs)))", "(S (NP (NNP John) ('' ')) (VP (VBZ runs)))"
    row = one(gold, test, params)
    assert (row.status, row.words, row.matched, row.gold_brackets, row.correct_tags) == (OK, 3, 3, 3, 2)
    assert one(gold, test).errors == ("Length unmatch (3|2)",)  # COLLINS.prm has no QUOTE_LABEL


def test_labeled_0_ignores_labels_and_unreadable_input_stops():
    assert one("(S (A (P a) (Q b)))", "(X (B (P a) (Q b)))", dataclasses.replace(COLLINS, labeled=False)).matched == 2
    with pytest.raises(DataError, match=r"test, sentence 1: text outside brackets \('oops'\)"):
        score(["(S (P a))"], ["oops (S (P a))"])
    with pytest.raises(DataError, match="1 gold sentences but 2 test sentences"):
        score(["(S (P a))"], ["(S (P a))", "(S (P a))"])
    unbalanced = one("(S (P a) (Q b))", "(S (A (P a) (Q b))", EvalbParams())
    assert unbalanced.status == ERROR and unbalanced.errors == ("Bracketing is unbalanced (too many open bracket)",)


def test_more_than_max_error_errors_stop_the_scorer():
    # evalb.c, Error(): it exits once the count of earlier errors exceeds MAX_ERROR (10 here),
    # so 11 errors are reported and the 12th stops it.
    gold, bad = "(S (P a) (Q b))", "(S (P a))"
    assert score([gold] * 11, [bad] * 11, COLLINS).summary()["all"]["error_sentences"] == 11
    with pytest.raises(DataError, match="sentence 12: Length unmatch .* more than MAX_ERROR 10 errors"):
        score([gold] * 12, [bad] * 12, COLLINS)
