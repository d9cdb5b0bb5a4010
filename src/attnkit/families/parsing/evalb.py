"""EVALB (Sekine & Collins 1997), the constituency-parsing scorer, reimplemented rule for rule.

Each sentence is read as EVALB reads a line (README sections 5-7): a bracket holding one word is
a terminal (its label the POS tag) and not a constituent; a terminal whose tag is a
DELETE_LABEL (``-NONE-``, punctuation in COLLINS.prm) is removed with its word, so spans are
counted over the remaining words; every bracket has its label cut at the first ``-`` or ``=``
(function tags, co-indices), and is ignored if that label is a DELETE_LABEL (``TOP``) or if it
now spans no word. The length used for the cut-off counts every word except those tagged with a
DELETE_LABEL_FOR_LENGTH. A test sentence with no words is a *skip* sentence; a sentence whose
word counts or words (EQ_WORD aside) differ, or that cannot be read, is an *error* sentence:
both are counted and left out of every other figure.

Brackets match greedily: each gold bracket, in order, takes the first unmatched test bracket
with the same span (and, with LABELED 1, an equal or EQ_LABEL label), so n gold and m test
copies of one labelled span give min(n, m) matches (README 7.5). A test bracket crosses if some
gold bracket overlaps it without nesting. Tagging accuracy compares the tags of the remaining
words. The 2006 update's QUOTE_LABEL repair (a quote tagged with a deleted label on one side
only is put back) is included.

Departures, all where EVALB has no defined result: unequal numbers of sentences and text outside
brackets (on which EVALB loops until MAX_ERROR stops it) raise `DataError`; a surplus ``)`` is
an error of that sentence and is ignored; lines have no length limit. Passing MAX_ERROR raises
`DataError`, where EVALB exits.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from attnkit.errors import DataError
from attnkit.families.parsing.evalb_params import EvalbParams
from attnkit.families.parsing.evalb_report import ERROR, OK, SKIP, Report, Row
from attnkit.families.parsing.trees import Tree

_QUOTE_WORDS = ("'", '"', "/")
DEFAULTS = EvalbParams()  # EVALB run without a parameter file
_UNMATCHED, _MATCHED, _IGNORED = 0, 1, 5  # a bracket's state (EVALB's result codes)


@dataclass
class _Bracket:
    start: int
    end: int = -1  # -1 until closed (stays so in an unbalanced sentence)
    label: str = ""
    result: int = 0  # _UNMATCHED, _MATCHED or _IGNORED


@dataclass
class _Quote:
    word: str
    label: str
    index: int  # the position it has or would have among the kept words
    bracket: int  # the number of brackets opened before it
    ends: tuple[int, ...]  # the brackets open around it


@dataclass
class _Sentence:
    terminals: list[tuple[str, str]] = field(default_factory=list)  # (word, tag) kept
    brackets: list[_Bracket] = field(default_factory=list)
    quotes: list[_Quote] = field(default_factory=list)
    length: int = 0  # words not tagged with a DELETE_LABEL_FOR_LENGTH
    errors: list[str] = field(default_factory=list)


def _read(text: str, params: EvalbParams, where: str) -> _Sentence:  # noqa: C901, PLR0912 (EVALB's read_line, one pass)
    """EVALB's read_line: terminals, brackets over kept-word positions, length, quote terminals."""
    sent, stack, i, n = _Sentence(), [], 0, len(text)

    def take(j: int) -> int:  # the end of the label or word starting at j
        while j < n and not (text[j].isspace() or text[j] in "()"):
            j += 1
        return j

    while i < n:
        if text[i].isspace():
            i += 1
        elif text[i] == "(":
            end = take(i + 1)
            label, q = text[i + 1 : end], end
            if q < n and text[q].isspace():
                while q < n and text[q].isspace():
                    q += 1
                word_end = take(q)
                if word_end < n and text[word_end] == ")":
                    _terminal(sent, label, text[q:word_end], stack, params)
                    i = word_end + 1
                    continue
                if word_end > q:  # a word not closed at once: EVALB reports it and then loops on it
                    raise DataError(f"{where}: more than two elements in a bracket ({label} ...); EVALB stops here")
                if q == n:  # the text ends inside the bracket
                    sent.errors.append("More than two elements in a bracket")
            stack.append(len(sent.brackets))
            sent.brackets.append(_Bracket(start=len(sent.terminals), label=label))
            i = end
        elif text[i] == ")":
            if stack:
                sent.brackets[stack.pop()].end = len(sent.terminals)
            else:
                sent.errors.append("Bracketing unbalance (too many close bracket)")
            i += 1
        else:
            raise DataError(f"{where}: text outside brackets ({text[i : take(i)]!r}); EVALB stops here")
    if stack:
        sent.errors.append("Bracketing is unbalanced (too many open bracket)")
    return sent


def _terminal(sent: _Sentence, label: str, word: str, stack: list[int], params: EvalbParams) -> None:
    """Count, record (quote) and keep or delete one terminal, as read_line does."""
    if label not in params.delete_labels_for_length:
        sent.length += 1
    if label in params.quote_labels and word in _QUOTE_WORDS:
        sent.quotes.append(_Quote(word, label, len(sent.terminals), len(sent.brackets), tuple(stack)))
    if label not in params.delete_labels:
        sent.terminals.append((word, label))


def _fix_quote(gold: _Sentence, test: _Sentence, params: EvalbParams) -> None:
    """EVALB 2006's fix_quote: put back a quote deleted on one side only (same position)."""
    deleted = params.delete_labels
    for i, q2 in enumerate(test.quotes):
        index = q2.index
        for j, q1 in enumerate(gold.quotes):
            if q1.index != index or q1.label == q2.label:
                continue
            if q1.label in deleted and q2.label not in deleted:
                _reinsert(q1, gold)
                for later in gold.quotes[j:]:
                    later.index += 1
            elif q2.label in deleted and q1.label not in deleted:
                _reinsert(q2, test)
                for later in test.quotes[i:]:
                    later.index += 1


def _reinsert(quote: _Quote, sent: _Sentence) -> None:
    """EVALB's reinsert_term: the word goes back, brackets after it shift, those around it grow."""
    sent.terminals.insert(quote.index, (quote.word, quote.label))
    for bracket in sent.brackets[quote.bracket :]:
        bracket.start += 1
        bracket.end += 1
    for k in quote.ends:
        sent.brackets[k].end += 1


def _massage(sent: _Sentence, params: EvalbParams) -> int:
    """EVALB's massage_data for one side: cut labels, mark ignored brackets; the count kept."""
    for bracket in sent.brackets:
        bracket.result = _UNMATCHED
        if bracket.start == bracket.end:
            bracket.result = _IGNORED
            continue
        cut = min((k for k in (bracket.label.find("-"), bracket.label.find("=")) if k >= 0), default=None)
        bracket.label = bracket.label[:cut]
        if any(params.label_eq(bracket.label, d) for d in params.delete_labels):
            bracket.result = _IGNORED
    return sum(b.result != _IGNORED for b in sent.brackets)


def _compare(number: int, gold: _Sentence, test: _Sentence, params: EvalbParams) -> Row:
    """EVALB's calc_result for one sentence pair."""
    errors = [*gold.errors, *test.errors]
    status = ERROR if errors else OK

    def early(code: int, message: str | None = None) -> Row:
        if message:
            errors.append(message)
        return Row(number, gold.length, code, 0, 0, 0, 0, len(gold.terminals), 0, tuple(errors), False)

    if not test.terminals:
        return early(SKIP)
    if len(gold.terminals) != len(test.terminals):
        _fix_quote(gold, test, params)
        if len(gold.terminals) != len(test.terminals):
            return early(ERROR, f"Length unmatch ({len(gold.terminals)}|{len(test.terminals)})")
    for (w1, _), (w2, _) in zip(gold.terminals, test.terminals):
        if not params.word_eq(w1, w2):
            return early(ERROR, f"Words unmatch ({w1}|{w2})")
    n_gold, n_test = _massage(gold, params), _massage(test, params)
    matched = 0
    for g in gold.brackets:
        if g.result == _IGNORED:
            continue
        for t in test.brackets:
            same_label = not params.labeled or params.label_eq(g.label, t.label)
            if t.result == _UNMATCHED and (g.start, g.end) == (t.start, t.end) and same_label:
                g.result = t.result = _MATCHED
                matched += 1
                break
    crossing = sum(any(g.result != _IGNORED and _crosses(g, t) for g in gold.brackets) for t in test.brackets if t.result != _IGNORED)
    tags = sum(params.label_eq(t1, t2) for (_, t1), (_, t2) in zip(gold.terminals, test.terminals))
    words = len(gold.terminals)
    return Row(number, gold.length, status, matched, n_gold, n_test, crossing, words, tags, tuple(errors))


def _crosses(g: _Bracket, t: _Bracket) -> bool:
    return (g.start < t.start < g.end < t.end) or (t.start < g.start < t.end < g.end)


def _as_text(item: Tree | str | None) -> str:
    return "" if item is None else item if isinstance(item, str) else str(item)


def score(
    gold: Sequence[Tree | str | None],
    test: Sequence[Tree | str | None],
    params: EvalbParams = DEFAULTS,
    *,
    names: tuple[str, str] = ("gold", "test"),
) -> Report:
    """Score test parses against gold parses exactly as EVALB does.

    Args:
        gold: Gold trees: `Tree`s (scored as their one-line text, ``str(tree)``), or EVALB input
            lines (one bracketed sentence each, which may be several trees or unbalanced).
        test: The parses, aligned with `gold`; None or ``""`` is an empty (skipped) parse.
        params: The settings (`evalb_params.read_params("COLLINS.prm")` or `COLLINS`).
        names: What to call the two sides in errors (file names).

    Raises:
        DataError: Different numbers of sentences, text EVALB cannot read, or more than
            MAX_ERROR errors (naming the sentence).
    """
    if len(gold) != len(test):
        raise DataError(f"{len(gold)} gold sentences but {len(test)} test sentences")
    rows, errors = [], 0
    for number, (g, t) in enumerate(zip(gold, test), start=1):
        where = f"sentence {number}"
        gold_sentence = _read(_as_text(g), params, f"{names[0]}, {where}")
        row = _compare(number, gold_sentence, _read(_as_text(t), params, f"{names[1]}, {where}"), params)
        for message in row.errors:
            errors += 1
            if errors - 1 > params.max_error:  # EVALB: if (Error_count++ > Max_error) exit(1)
                raise DataError(f"{where}: {message}: more than MAX_ERROR {params.max_error} errors, EVALB stops")
        rows.append(row)
    return Report(tuple(rows), params.cutoff_len)


def score_files(gold_path: str | Path, test_path: str | Path, params: EvalbParams = DEFAULTS) -> Report:
    """`score` two EVALB input files (one sentence per line; a blank test line is skipped)."""
    sides = []
    for path in (Path(gold_path), Path(test_path)):
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            raise DataError(f"{path}: no such file") from None
        except (OSError, UnicodeDecodeError) as err:
            raise DataError(f"{path}: cannot read ({err})") from None
        lines = text.split("\n")
        sides.append(lines[:-1] if text.endswith("\n") else lines)
    if len(sides[0]) != len(sides[1]):
        raise DataError(f"{gold_path} has {len(sides[0])} lines but {test_path} has {len(sides[1])}")
    return score(sides[0], sides[1], params, names=(str(gold_path), str(test_path)))  # sentence N = line N
