"""EVALB's result (`Row`, `Report`) and its printed report, laid out as EVALB prints it (Sekine &
Collins 1997, README section 4).

Two layouts: ``"1997"``, the original program's, which produced the ``sample.rsl`` shipped with
EVALB (no F-measure line; a skipped or rejected sentence shows the gold word count; the totals
line's "Cross Bracket" column holds the number of sentences with no crossing bracket, 16 in
sample.rsl where the sentences cross 1 bracket in all, and its bracket counts have other widths);
``"2006"``, the Brown update that most papers ran (``Bracketing FMeasure`` lines, such a sentence
shows 0 words, the totals line shows the crossing brackets).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

HEADER = (
    "  Sent.                        Matched  Bracket   Cross        Correct Tag\n ID  Len.  Stat. Recal  Prec.  Bracket gold test Bracket Words  Tags Accracy\n"
)
RULE = "=" * 76 + "\n"
_TOTALS = {"1997": "                %6.2f %6.2f %6d %6d %4d  %5d", "2006": "                %6.2f %6.2f %6d %5d %5d  %5d"}
_LINES = (
    ("Number of sentence        = %6d", "sentences"),
    ("Number of Error sentence  = %6d", "error_sentences"),
    ("Number of Skip  sentence  = %6d", "skip_sentences"),
    ("Number of Valid sentence  = %6d", "valid_sentences"),
    ("Bracketing Recall         = %6.2f", "recall"),
    ("Bracketing Precision      = %6.2f", "precision"),
    ("Bracketing FMeasure       = %6.2f", "fmeasure"),
    ("Complete match            = %6.2f", "complete_match"),
    ("Average crossing          = %6.2f", "average_crossing"),
    ("No crossing               = %6.2f", "no_crossing"),
    ("2 or less crossing        = %6.2f", "two_or_less_crossing"),
    ("Tagging accuracy          = %6.2f", "tagging_accuracy"),
)


OK, ERROR, SKIP = 0, 1, 2  # EVALB's Stat. column


@dataclass(frozen=True)
class Row:
    """One sentence's line of EVALB's table (`words` is the gold word count even when skipped)."""

    id: int
    length: int
    status: int
    matched: int
    gold_brackets: int
    test_brackets: int
    crossing: int
    words: int
    correct_tags: int
    errors: tuple[str, ...] = ()
    compared: bool = True  # False: skipped or rejected before its brackets were compared

    @property
    def recall(self) -> float:
        return 100.0 * self.matched / self.gold_brackets if self.gold_brackets else 0.0

    @property
    def precision(self) -> float:
        return 100.0 * self.matched / self.test_brackets if self.test_brackets else 0.0

    @property
    def tag_accuracy(self) -> float:
        return 100.0 * self.correct_tags / self.words if self.words else 0.0


@dataclass(frozen=True)
class Report:
    """EVALB's result: one `Row` per sentence and the two summary blocks."""

    rows: tuple[Row, ...]
    cutoff_len: int

    def block(self, rows: Sequence[Row]) -> dict[str, float | int | None]:
        """EVALB's summary figures over `rows` (percentages unrounded; F is None when P + R = 0)."""
        valid = [r for r in rows if r.status == OK]
        counts = {k: sum(getattr(r, k) for r in valid) for k in ("matched", "gold_brackets", "test_brackets")}
        words, tags, cross = (sum(getattr(r, k) for r in valid) for k in ("words", "correct_tags", "crossing"))
        recall = 100.0 * counts["matched"] / counts["gold_brackets"] if counts["gold_brackets"] else 0.0
        precision = 100.0 * counts["matched"] / counts["test_brackets"] if counts["test_brackets"] else 0.0
        n = len(valid)
        complete = sum(r.gold_brackets == r.test_brackets == r.matched for r in valid)
        return {
            "sentences": len(rows),
            "error_sentences": sum(r.status == ERROR for r in rows),
            "skip_sentences": sum(r.status == SKIP for r in rows),
            "valid_sentences": n,
            "recall": recall,
            "precision": precision,
            "fmeasure": 2 * precision * recall / (precision + recall) if precision + recall else None,
            "complete_match": 100.0 * complete / n if n else 0.0,
            "average_crossing": cross / n if n else 0.0,
            "no_crossing": 100.0 * sum(r.crossing == 0 for r in valid) / n if n else 0.0,
            "two_or_less_crossing": 100.0 * sum(r.crossing <= 2 for r in valid) / n if n else 0.0,
            "tagging_accuracy": 100.0 * tags / words if words else 0.0,
            **counts,
            "crossing": cross,
            "no_crossing_sentences": sum(r.crossing == 0 for r in valid),
            "words": words,
            "correct_tags": tags,
        }

    def summary(self) -> dict[str, dict[str, float | int | None]]:
        """``{"all": block, "len<=CUTOFF": block}``: JSON-ready (see `block`)."""
        short = [r for r in self.rows if r.length <= self.cutoff_len]
        return {"all": self.block(self.rows), f"len<={self.cutoff_len}": self.block(short)}

    def format_table(self, *, style: str = "1997") -> str:
        """EVALB's printed report (`format_table`)."""
        return format_table(self, style=style)


def format_row(row: Row, *, style: str = "1997") -> str:
    """One sentence's line (EVALB's individual_result), without the line end."""
    words = row.words if row.compared or style == "1997" else 0
    return (
        "%4d  %3d    %d  " % (row.id, row.length, row.status)
        + "%6.2f %6.2f   %3d    %3d  %3d    %3d" % (row.recall, row.precision, row.matched, row.gold_brackets, row.test_brackets, row.crossing)
        + "   %4d  %4d   %6.2f" % (words, row.correct_tags, row.tag_accuracy)
    )


def format_table(report: Report, *, style: str = "1997") -> str:
    """The whole report: header, a line per sentence, the totals line and the summary blocks.

    Raises:
        ValueError: `style` is not ``"1997"`` or ``"2006"``.
    """
    if style not in _TOTALS:
        raise ValueError(f"style must be '1997' or '2006', not {style!r}")
    summary = report.summary()
    total = summary["all"]
    out = [HEADER, RULE, *(format_row(row, style=style) + "\n" for row in report.rows), RULE]
    if total["gold_brackets"] and total["test_brackets"]:
        out.append(
            _TOTALS[style]
            % (
                total["recall"],
                total["precision"],
                total["matched"],
                total["gold_brackets"],
                total["test_brackets"],
                total["no_crossing_sentences" if style == "1997" else "crossing"],
            )
        )
    out.append("  %5d %5d   %6.2f\n" % (total["words"], total["correct_tags"], total["tagging_accuracy"]))
    out.append("=== Summary ===\n")
    for title, block in zip(("All", f"len<={report.cutoff_len}"), summary.values()):
        out.append(f"\n-- {title} --\n")
        for text, key in _LINES:
            if key == "fmeasure" and style == "1997":
                continue
            value = block[key]
            out.append(text % (math.nan if value is None else value) + "\n")
    return "".join(out)
