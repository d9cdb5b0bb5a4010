"""EVALB's parameter files (``.prm``), read as EVALB (Sekine & Collins 1997) reads them.

EVALB README section 6: one ``KEYWORD value`` per line; lines starting with ``#`` and lines
shorter than 3 characters are ignored. Keywords: ``DEBUG``, ``MAX_ERROR``, ``CUTOFF_LEN``,
``LABELED`` (integers), ``DELETE_LABEL``, ``DELETE_LABEL_FOR_LENGTH``, ``QUOTE_LABEL`` (one label
each, repeatable), ``EQ_LABEL`` and ``EQ_WORD`` (two values each, repeatable). Departure from
EVALB, which warns on stderr and goes on: an unknown keyword, a missing value, a non-integer or a
wrong number of values is a `ConfigError` naming file and line (a typo would otherwise change the
scores silently).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from attnkit.errors import ConfigError


@dataclass(frozen=True)
class EvalbParams:
    """The settings of one EVALB run; the defaults are EVALB's without a parameter file."""

    debug: int = 0  # parsed and kept; this scorer never prints
    max_error: int = 10  # EVALB stops (here: DataError) once more errors than this have occurred
    cutoff_len: int = 40  # the second summary block: sentences of length <= this
    labeled: bool = True  # a matching bracket needs the same label as well as the same span
    delete_labels: tuple[str, ...] = ()
    delete_labels_for_length: tuple[str, ...] = ()
    quote_labels: tuple[str, ...] = ()  # the 2006 update's misquote repair (QUOTE_LABEL)
    eq_labels: tuple[tuple[str, str], ...] = ()
    eq_words: tuple[tuple[str, str], ...] = ()

    def label_eq(self, a: str, b: str) -> bool:
        """EVALB's label_comp: equal, or an EQ_LABEL pair (either order)."""
        return a == b or any((a, b) in ((x, y), (y, x)) for x, y in self.eq_labels)

    def word_eq(self, a: str, b: str) -> bool:
        """EVALB's word_comp: equal, or an EQ_WORD pair (either order)."""
        return a == b or any((a, b) in ((x, y), (y, x)) for x, y in self.eq_words)


_INTEGERS = {"DEBUG": "debug", "MAX_ERROR": "max_error", "CUTOFF_LEN": "cutoff_len", "LABELED": "labeled"}
_LABELS = {
    "DELETE_LABEL": "delete_labels",
    "DELETE_LABEL_FOR_LENGTH": "delete_labels_for_length",
    "QUOTE_LABEL": "quote_labels",
}
_PAIRS = {"EQ_LABEL": "eq_labels", "EQ_WORD": "eq_words"}


def parse_params(text: str, source: str = "<parameters>") -> EvalbParams:
    """Read the contents of an EVALB ``.prm`` file.

    Args:
        text: The file's text.
        source: The file name, for errors.

    Raises:
        ConfigError: ``"SOURCE, line N: ..."`` for an unknown keyword, a missing value, a value
            that is not an integer, or an EQ_LABEL/EQ_WORD without exactly two values.
    """
    params = EvalbParams()
    for number, line in enumerate(text.split("\n"), start=1):
        line = line.rstrip()
        if line.startswith("#") or len(line) < 3:  # EVALB's comment and too-short rules
            continue
        keyword, value = (line.split(None, 1) + [""])[:2]  # the keyword, then the rest of the line
        where = f"{source}, line {number}"
        if not value:
            raise ConfigError(f"{where}: {keyword} has no value")
        params = _set(params, keyword, value, where)
    return params


def _set(params: EvalbParams, keyword: str, value: str, where: str) -> EvalbParams:
    """`params` with one parameter line applied."""
    if keyword in _INTEGERS:
        try:
            number = int(value.split()[0])
        except ValueError:
            raise ConfigError(f"{where}: {keyword} needs an integer, got {value!r}") from None
        name = _INTEGERS[keyword]
        return replace(params, **{name: bool(number) if name == "labeled" else number})
    if keyword in _LABELS:
        name = _LABELS[keyword]
        return replace(params, **{name: (*getattr(params, name), value)})
    if keyword in _PAIRS:
        values = value.split()
        if len(values) != 2:
            raise ConfigError(f"{where}: {keyword} requires two values, got {len(values)}")
        name = _PAIRS[keyword]
        return replace(params, **{name: (*getattr(params, name), (values[0], values[1]))})
    raise ConfigError(f"{where}: unknown keyword {keyword!r}")


def read_params(path: str | Path) -> EvalbParams:
    """Read an EVALB ``.prm`` file (see `parse_params`).

    Raises:
        ConfigError: The file is missing or unreadable, or a line is invalid.
    """
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such parameter file") from None
    except (OSError, UnicodeDecodeError) as err:
        raise ConfigError(f"{path}: cannot read ({err})") from None
    return parse_params(text, str(path))


# COLLINS.prm as shipped with EVALB: the setting every WSJ parsing paper reports (README sec. 6).
COLLINS = EvalbParams(
    delete_labels=("TOP", "-NONE-", ",", ":", "``", "''", "."),
    delete_labels_for_length=("-NONE-",),
    eq_labels=(("ADVP", "PRT"),),
)
