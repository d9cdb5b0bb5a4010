"""`attnkit data check`: find what is wrong with a parallel corpus before training on it.

The checker reads raw bytes, so it reports bad UTF-8 instead of stopping at it. Each finding has
an action from a policy: ``fail`` (stop), ``warn`` (keep the lines) or ``skip`` (drop them).
"""

from __future__ import annotations

import hashlib
import math
import statistics
from dataclasses import dataclass, field
from itertools import zip_longest
from pathlib import Path

from attnkit.data.text import decode_line, iter_byte_lines
from attnkit.errors import ConfigError

DEFAULT_POLICY = {
    "mismatch": "fail",  # the files have different line counts
    "not_utf8": "fail",  # a line is not valid UTF-8
    "blank": "skip",  # a side is empty after stripping
    "too_long": "skip",  # a side has more than max_len whitespace tokens
    "copy": "warn",  # the source equals the target
    "duplicate": "warn",  # the pair repeats an earlier pair
    "ratio": "warn",  # token counts differ by more than max_ratio
}
ACTIONS = ("fail", "warn", "skip")


@dataclass(frozen=True)
class Finding:
    """One check's result.

    Attributes:
        name: The check (a `DEFAULT_POLICY` key).
        lines: 1-based line numbers it flags (for ``mismatch``: lines only one file has).
        action: ``fail``, ``warn`` or ``skip``.
        detail: Extra facts for the table, e.g. counts per side.
    """

    name: str
    lines: frozenset[int]
    action: str
    detail: str = ""

    @property
    def count(self) -> int:
        """Number of flagged lines."""
        return len(self.lines)

    @property
    def first_line(self) -> int | None:
        """First flagged line, or None."""
        return min(self.lines, default=None)


@dataclass(frozen=True)
class CheckReport:
    """Findings for a pair of files, in `DEFAULT_POLICY` order."""

    src_path: Path
    tgt_path: Path
    src_lines: int
    tgt_lines: int
    findings: tuple[Finding, ...]
    first_side: dict[str, int] = field(default_factory=dict)  # not_utf8, blank: side of the first flagged line (0 src, 1 tgt, 2 both)

    @property
    def failed(self) -> bool:
        """True if any finding with action ``fail`` flagged a line."""
        return any(f.count and f.action == "fail" for f in self.findings)

    @property
    def skip_lines(self) -> set[int]:
        """Line numbers to drop: every line flagged by a ``skip`` finding."""
        return {n for f in self.findings if f.action == "skip" for n in f.lines}

    def describe(self, action: str) -> str:
        """One-line summary of the flagged findings with this action ("" if none).

        Args:
            action: ``fail``, ``warn`` or ``skip``.

        Returns:
            E.g. ``"mismatch 1 (first line 1001); not_utf8 2 (first line 7)"``.
        """
        return "; ".join(f"{f.name} {f.count} (first line {f.first_line})" for f in self.findings if f.count and f.action == action)

    def first_failure(self) -> str:
        """The first ``fail`` finding as one sentence naming the file and the line ("" if none),
        e.g. ``"b.de, line 3: empty line (its pair in a.en is not)"``."""
        finding = next((f for f in self.findings if f.count and f.action == "fail"), None)
        if finding is None:
            return ""
        line, paths = finding.first_line, (self.src_path, self.tgt_path)
        if finding.name == "mismatch":
            shift = finding.detail.partition("; ")[2]
            return f"{self.src_path} has {self.src_lines} lines but {self.tgt_path} has {self.tgt_lines}" + (f" ({shift})" if shift else "")
        side = self.first_side.get(finding.name, 2)
        where = f"{paths[side]}, line {line}" if side < 2 else f"{self.src_path} and {self.tgt_path}, line {line}"
        what = {
            "not_utf8": "invalid UTF-8",
            "blank": f"empty line (its pair in {paths[1 - side]} is not)" if side < 2 else "both sides empty",
            "too_long": "a side is longer than data.max_len whitespace tokens",
            "copy": "the source equals the target",
            "duplicate": "the pair repeats an earlier pair",
            "ratio": "the token counts differ by more than data.max_ratio",
        }[finding.name]
        return f"{where}: {what}"

    def table(self) -> str:
        """Aligned summary: the two files, then check, count, first line, action, detail."""
        rows = [("check", "count", "first line", "action", "detail")]
        for f in self.findings:
            rows.append((f.name, str(f.count), str(f.first_line or "-"), f.action, f.detail))
        widths = [max(len(row[c]) for row in rows) for c in range(4)]
        lines = [
            f"src: {self.src_path} ({self.src_lines} lines)",
            f"tgt: {self.tgt_path} ({self.tgt_lines} lines)",
        ]
        for name, count, first, action, detail in rows:
            cells = [
                name.ljust(widths[0]),
                count.rjust(widths[1]),
                first.rjust(widths[2]),
                action.ljust(widths[3]),
                detail,
            ]
            lines.append("  ".join(cells).rstrip())
        return "\n".join(lines)


def check_parallel(
    src_path: str | Path,
    tgt_path: str | Path,
    *,
    max_len: int = 250,
    max_ratio: float = 3.0,
    policy: dict[str, str] | None = None,
) -> CheckReport:
    """Check a sentence-aligned pair of files line by line.

    Args:
        src_path: Source file (plain or ``.gz``).
        tgt_path: Target file (plain or ``.gz``).
        max_len: A pair is ``too_long`` if a side has more whitespace tokens than this.
        max_ratio: A pair is a ``ratio`` outlier if one side has more than this many times the
            other's whitespace tokens.
        policy: Actions overriding `DEFAULT_POLICY`, by check name.

    Returns:
        The report. Pair checks (blank, too_long, copy, duplicate, ratio) cover the lines both
        files have; a pair with a blank side gets no other pair check.

    Raises:
        DataError: A file is missing, a directory, unreadable or not valid gzip.
        ConfigError: The policy names an unknown check or action.
    """
    actions = _resolve_policy(policy)
    scan = _Scan(max_len=max_len, max_ratio=max_ratio)
    pairs = zip_longest(iter_byte_lines(src_path), iter_byte_lines(tgt_path))
    for number, (src_raw, tgt_raw) in enumerate(pairs, start=1):
        scan.add(number, src_raw, tgt_raw)
    details = {
        "mismatch": scan.mismatch_detail(),
        "not_utf8": f"src {scan.bad[0]}, tgt {scan.bad[1]}",
        "blank": f"src {scan.blank[0]}, tgt {scan.blank[1]}",
    }
    findings = tuple(Finding(name, frozenset(scan.flagged[name]), actions[name], details.get(name, "")) for name in DEFAULT_POLICY)
    return CheckReport(Path(src_path), Path(tgt_path), scan.counts[0], scan.counts[1], findings, scan.first_side)


def _resolve_policy(policy: dict[str, str] | None) -> dict[str, str]:
    """Merge a policy over the defaults, rejecting unknown checks and actions."""
    for name, action in (policy or {}).items():
        if name not in DEFAULT_POLICY:
            known = ", ".join(DEFAULT_POLICY)
            raise ConfigError(f"check policy: unknown check {name!r} (known: {known})")
        if action not in ACTIONS:
            raise ConfigError(f"check policy: {name}: unknown action {action!r} (fail, warn, skip)")
    return {**DEFAULT_POLICY, **(policy or {})}


@dataclass
class _Scan:
    """Running state of one pass over two files."""

    max_len: int
    max_ratio: float
    flagged: dict[str, list[int]] = field(default_factory=lambda: {n: [] for n in DEFAULT_POLICY})
    counts: list[int] = field(default_factory=lambda: [0, 0])  # lines per side
    bad: list[int] = field(default_factory=lambda: [0, 0])  # invalid UTF-8 lines per side
    blank: list[int] = field(default_factory=lambda: [0, 0])  # blank lines per side
    chars: tuple[list[int], list[int]] = field(default_factory=lambda: ([], []))  # lengths per side
    seen: set[bytes] = field(default_factory=set)  # digests of the pairs so far
    first_side: dict[str, int] = field(default_factory=dict)  # not_utf8, blank: side of the first flagged line (2: both)

    def add(self, number: int, src_raw: bytes | None, tgt_raw: bytes | None) -> None:
        """Inspect line ``number`` of each file (None where that file has ended)."""
        texts = [self._decode(side, number, raw) for side, raw in enumerate((src_raw, tgt_raw))]
        if None in texts:
            self.flagged["mismatch"].append(number)
            return
        src, tgt = texts
        if not src or not tgt:
            self.first_side.setdefault("blank", 2 if not src and not tgt else int(bool(src)))
            self.flagged["blank"].append(number)
            self.blank[0] += not src
            self.blank[1] += not tgt
            return
        n_src, n_tgt = len(src.split()), len(tgt.split())
        digest = hashlib.blake2b(f"{src}\n{tgt}".encode(), digest_size=16).digest()
        checks = {
            "too_long": max(n_src, n_tgt) > self.max_len,
            "copy": src == tgt,
            "duplicate": digest in self.seen,
            "ratio": max(n_src, n_tgt) > self.max_ratio * min(n_src, n_tgt),
        }
        self.seen.add(digest)
        for name, hit in checks.items():
            if hit:
                self.flagged[name].append(number)

    def _decode(self, side: int, number: int, raw: bytes | None) -> str | None:
        """Decode one side's line, counting it and noting invalid UTF-8 (replaced by U+FFFD)."""
        if raw is None:
            return None
        self.counts[side] += 1
        try:
            text = decode_line(raw, number)
        except UnicodeDecodeError:
            text = decode_line(raw, number, errors="replace")
            self.bad[side] += 1
            self.first_side.setdefault("not_utf8", side)
            if self.flagged["not_utf8"][-1:] != [number]:
                self.flagged["not_utf8"].append(number)
        self.chars[side].append(len(text))
        return text

    def mismatch_detail(self) -> str:
        """Describe a line-count mismatch and, if it shows, where alignment is lost."""
        if self.counts[0] == self.counts[1]:
            return ""
        detail = f"src {self.counts[0]} lines, tgt {self.counts[1]}"
        shift = _shift_start(*self.chars)
        if shift is not None:
            detail += f"; pairs look misaligned from about line {shift}"
        return detail


def _shift_start(src_chars: list[int], tgt_chars: list[int]) -> int | None:
    """Find where extra lines in the longer file most likely start misaligning the pairs.

    Model: the longer file has ``d`` extra lines at some position ``k``; pairs before ``k`` are
    aligned and pairs after it are off by ``d``. The cost of a pairing is the distance of its
    log character-length ratio from the median ratio; the ``k`` with the lowest total cost wins.

    Args:
        src_chars: Character length of every source line.
        tgt_chars: Character length of every target line.

    Returns:
        1-based line (in the shorter file) where the shift starts, or None if extra lines at
        the end explain the data as well (or nearly).
    """
    short, long_ = sorted((src_chars, tgt_chars), key=len)
    d, n = len(long_) - len(short), len(short)
    if n == 0:
        return None
    log_ratios = [math.log((a + 1) / (b + 1)) for a, b in zip(short, long_)]
    centre = statistics.median(log_ratios)
    aligned = [abs(r - centre) for r in log_ratios]
    shifted = [abs(math.log((short[i] + 1) / (long_[i + d] + 1)) - centre) for i in range(n)]
    # total(k) = sum(aligned[:k]) + sum(shifted[k:]); walk k down from n (no shift).
    total = sum(aligned)
    best_k, best_total = n, total
    for k in range(n - 1, -1, -1):
        total += shifted[k] - aligned[k]
        if total < best_total:
            best_k, best_total = k, total
    tail = n - best_k
    gain = sum(aligned[best_k:]) - sum(shifted[best_k:])
    if tail == 0 or gain < max(1.0, 0.5 * sum(aligned[best_k:])):
        return None
    return best_k + 1
