"""score_translations against sacreBLEU called directly."""

from __future__ import annotations

import pytest
import sacrebleu

from attnkit.errors import DataError
from attnkit.families.translation.bleu import score_translations

HYPS = ["The cat sat on the mat.", "a dog barked loudly", "It is raining today !", "Hello World"]
REFS = ["The cat sat on the mat.", "A dog barked loudly.", "It's raining today!", "hello world"]


def test_matches_sacrebleu() -> None:
    report = score_translations(HYPS, REFS)
    cased = sacrebleu.corpus_bleu(HYPS, [REFS])
    lowered = sacrebleu.corpus_bleu(HYPS, [REFS], lowercase=True, tokenize="13a")
    assert report["bleu"] == cased.score
    assert report["bleu_lc"] == lowered.score
    assert report["chrf"] == sacrebleu.corpus_chrf(HYPS, [REFS]).score
    assert report["bleu_precisions"] == cased.precisions and report["brevity_penalty"] == cased.bp
    assert (report["sys_len"], report["ref_len"], report["n_sentences"]) == (cased.sys_len, cased.ref_len, 4)
    assert report["bleu_lc"] > report["bleu"]  # "a dog", "Hello World" differ only in case
    assert report["bleu_signature"] == f"nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:{sacrebleu.__version__}"
    assert report["bleu_lc_signature"].startswith("nrefs:1|case:lc|eff:no|tok:13a|")
    assert report["chrf_signature"].startswith("nrefs:1|case:mixed|eff:yes|nc:6|nw:0|")


def test_identical_text_scores_100() -> None:
    report = score_translations(REFS, REFS)
    scores = [report["bleu"], report["bleu_lc"], report["chrf"]]
    assert scores == [pytest.approx(100.0, abs=1e-9)] * 3  # BLEU is exp(mean log 1) * 100: rounding only


def test_count_mismatch_names_both_counts() -> None:
    with pytest.raises(DataError, match=r"3 sentences in hyp\.txt but 4 in ref\.txt"):
        score_translations(HYPS[:3], REFS, hyps_name="hyp.txt", refs_name="ref.txt")
    with pytest.raises(DataError, match="4 sentences in hypotheses but 2 in references"):
        score_translations(HYPS, REFS[:2])
    with pytest.raises(DataError, match="empty"):
        score_translations([], [])
