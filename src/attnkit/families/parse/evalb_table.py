"""EVALB's printed report, laid out as EVALB prints it (Sekine & Collins 1997, README section 4).

Two layouts: ``"1997"``, the original program's, which produced the ``sample.rsl`` shipped with
EVALB (no F-measure line; a skipped or rejected sentence shows the gold word count; the totals
line's "Cross Bracket" column holds the number of sentences with no crossing bracket, 16 in
sample.rsl where the sentences cross 1 bracket in all, and its bracket counts have other widths);
``"2006"``, the Brown update that most papers ran (``Bracketing FMeasure`` lines, such a sentence
shows 0 words, the totals line shows the crossing brackets).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from attnkit.families.parse.evalb import Report, Row

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
