"""benchmarks/engines.py's comparison of outputs: against attnkit fp32 and against an earlier run (--reference)."""

from __future__ import annotations

from benchmark_scripts import load_benchmark

engines = load_benchmark("engines")


def test_same_counts_equal_lines_over_the_reference():
    assert engines._same(["a", "b", "c", "d"], ["a", "x", "c", "d"]) == 0.75
    assert engines._same(["a"], ["a", "b"]) == 0.5  # a missing output is not equal


def _row(engine, beam, reference=None):
    row = {"engine": engine, "beam": beam, "sentences_per_s": 10.0, "bleu": 30.0, "same_as_attnkit_fp32": 1.0, "peak_rss_mb": 400}
    if reference is not None:
        row["same_as_reference"] = reference
    return row


def test_table_has_the_reference_column_only_when_a_row_has_it():
    plain = engines._table([_row("attnkit-fp32", 1), _row("ctranslate2-fp32", 5)])
    assert "reference" not in plain and "| ctranslate2-fp32 | beam 5 | 10.0 | 30.0 | 100.0% | 400 |" in plain
    compared = engines._table([_row("attnkit-fp32", 1, 1.0), _row("ctranslate2-fp32", 1)]).splitlines()
    assert compared[0].count("|") == compared[1].count("|") == compared[2].count("|") == compared[3].count("|") == 8
    assert compared[2] == "| attnkit-fp32 | greedy | 10.0 | 30.0 | 100.0% | 100.0% | 400 |"
    assert compared[3] == "| ctranslate2-fp32 | greedy | 10.0 | 30.0 | 100.0% | | 400 |"
