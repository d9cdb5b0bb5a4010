"""Corpus BLEU and chrF through sacreBLEU (Post 2018, "A Call for Clarity in Reporting BLEU Scores").

`score_translations` reports:

- `bleu`: sacreBLEU's corpus BLEU (Papineni et al. 2002) on detokenized, cased text with its own
  13a tokenization: the comparable number, reported with `bleu_signature`;
- `bleu_lc`: the same on lowercased text (sacreBLEU `lowercase=True`, tokenize "13a"). It
  approximates the tokenized, lowercased BLEU of `multi-bleu.perl -lc` run on Moses-tokenized
  text, the number many older NMT papers (e.g. Luong et al. 2015) report; it is not identical,
  since 13a and the Moses tokenizer split some punctuation differently;
- `chrf`: chrF (Popovic 2015, beta = 2, sacreBLEU defaults) with `chrf_signature`.

Hypotheses and references must be detokenized plain text, one sentence per item.
"""

from __future__ import annotations

from sacrebleu.metrics import BLEU, CHRF

from attnkit.errors import DataError


def score_translations(
    hyps: list[str], refs: list[str], *, hyps_name: str = "hypotheses", refs_name: str = "references"
) -> dict[str, float | str | list[float] | int]:
    """Score a test set against one reference per sentence.

    Args:
        hyps: system outputs, detokenized, one per sentence.
        refs: references, detokenized, aligned with hyps.
        hyps_name: what the hypotheses are called in error messages (e.g. their file name).
        refs_name: what the references are called in error messages.

    Returns:
        A JSON-serialisable dict: bleu, bleu_signature, bleu_precisions (1- to 4-gram, percent),
        brevity_penalty, sys_len, ref_len, bleu_lc, bleu_lc_signature, chrf, chrf_signature,
        n_sentences.

    Raises:
        DataError: if the two lists differ in length or are empty.
    """
    if len(hyps) != len(refs):
        raise DataError(f"cannot score: {len(hyps)} sentences in {hyps_name} but {len(refs)} in {refs_name}; BLEU needs exactly one reference per hypothesis")
    if not hyps:
        raise DataError(f"cannot score: {hyps_name} and {refs_name} are empty")
    bleu, bleu_lc, chrf = BLEU(tokenize="13a"), BLEU(lowercase=True, tokenize="13a"), CHRF()
    cased = bleu.corpus_score(hyps, [refs])
    lowered = bleu_lc.corpus_score(hyps, [refs])
    chrf_score = chrf.corpus_score(hyps, [refs])
    return {
        "bleu": cased.score,
        "bleu_signature": str(bleu.get_signature()),
        "bleu_precisions": list(cased.precisions),
        "brevity_penalty": cased.bp,
        "sys_len": cased.sys_len,
        "ref_len": cased.ref_len,
        "bleu_lc": lowered.score,
        "bleu_lc_signature": str(bleu_lc.get_signature()),
        "chrf": chrf_score.score,
        "chrf_signature": str(chrf.get_signature()),
        "n_sentences": len(hyps),
    }
