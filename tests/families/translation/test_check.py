"""Tests for attnkit.families.translation.data.check: counts and first lines on a crafted pair, policies, real data."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from attnkit.errors import ConfigError, DataError
from attnkit.families.translation.data.check import DEFAULT_POLICY, check_parallel

# line: source / target -> what the checker must see
CRAFTED = [
    (b"a b c", b"x y z"),  # 1 fine
    (b"", b"x"),  # 2 blank (source)
    (b"hello world", b"hello world"),  # 3 copy
    (b"a b c", b"x y z"),  # 4 duplicate of line 1
    (b"one", b"w1 w2 w3 w4"),  # 5 ratio 4 > 3
    (b"t " * 12, b"u " * 11),  # 6 too_long (12 > max_len 10)
    (b"bad \xff byte", b"ok fine"),  # 7 not_utf8 (source)
    (b"p q", b"   "),  # 8 blank (target)
    (b"\xe9t\xe9", b"summer"),  # 9 not_utf8 (latin-1 source)
    (b"p q", b"r s"),  # 10 fine
    (b"extra", None),  # 11 only in the source: mismatch
]


@pytest.fixture
def crafted(tmp_path: Path) -> tuple[Path, Path]:
    src, tgt = tmp_path / "c.src", tmp_path / "c.tgt.gz"
    src.write_bytes(b"".join(s + b"\n" for s, _ in CRAFTED))
    tgt.write_bytes(gzip.compress(b"".join(t + b"\n" for _, t in CRAFTED if t is not None)))
    return src, tgt


def test_crafted_counts_first_lines_and_actions(crafted: tuple[Path, Path]) -> None:
    report = check_parallel(*crafted, max_len=10)
    got = {f.name: (f.count, f.first_line, f.action) for f in report.findings}
    assert got == {
        "mismatch": (1, 11, "fail"),
        "not_utf8": (2, 7, "fail"),
        "blank": (2, 2, "skip"),
        "too_long": (1, 6, "skip"),
        "copy": (1, 3, "warn"),
        "duplicate": (1, 4, "warn"),
        "ratio": (1, 5, "warn"),
    }
    assert (report.src_lines, report.tgt_lines) == (11, 10)
    assert report.failed
    assert report.skip_lines == {2, 6, 8}
    assert report.describe("fail") == "mismatch 1 (first line 11); not_utf8 2 (first line 7)"


def test_table_is_aligned(crafted: tuple[Path, Path]) -> None:
    src, tgt = crafted
    lines = check_parallel(src, tgt, max_len=10).table().splitlines()
    assert lines[:2] == [f"src: {src} (11 lines)", f"tgt: {tgt} (10 lines)"]
    assert lines[2].split() == ["check", "count", "first", "line", "action", "detail"]
    assert lines[3] == "mismatch       1          11  fail    src 11 lines, tgt 10"
    assert lines[4] == "not_utf8       2           7  fail    src 2, tgt 0"
    assert lines[5] == "blank          2           2  skip    src 1, tgt 1"
    assert lines[9] == "ratio          1           5  warn"
    assert len(lines) == 3 + len(DEFAULT_POLICY)


def test_policy_overrides(crafted: tuple[Path, Path]) -> None:
    policy = {"mismatch": "skip", "not_utf8": "skip", "copy": "skip", "blank": "warn"}
    report = check_parallel(*crafted, max_len=10, policy=policy)
    assert not report.failed
    assert report.skip_lines == {11, 7, 9, 3, 6}


def test_bad_policy() -> None:
    with pytest.raises(ConfigError, match=r"^check policy: unknown check 'dups' \(known: mism"):
        check_parallel("a", "b", policy={"dups": "warn"})
    with pytest.raises(ConfigError, match=r"^check policy: copy: unknown action 'ignore'"):
        check_parallel("a", "b", policy={"copy": "ignore"})


def test_missing_file(tmp_path: Path) -> None:
    (tmp_path / "a").write_text("x\n")
    with pytest.raises(DataError) as err:
        check_parallel(tmp_path / "a", tmp_path / "b")
    assert str(err.value) == f"{tmp_path / 'b'}: no such file"


def test_real_multi30k(multi30k: Path) -> None:
    # From shared/data/README.md: 3 repeated (en, de) pairs; "@@" at de lines 16,510 and 16,664.
    report = check_parallel(multi30k / "train.en.gz", multi30k / "train.de.gz")
    counts = {f.name: (f.count, f.first_line) for f in report.findings if f.count}
    assert counts == {"duplicate": (3, 14215), "ratio": (2, 16510)}
    assert not report.failed and report.skip_lines == set()


def test_mismatch_locates_a_dropped_line(multi30k: Path, tmp_path: Path) -> None:
    with gzip.open(multi30k / "val.en.gz", "rb") as f:
        en = f.readlines()[:300]
    with gzip.open(multi30k / "val.de.gz", "rb") as f:
        de = f.readlines()[:300]
    (tmp_path / "en").write_bytes(b"".join(en))
    (tmp_path / "de").write_bytes(b"".join(de[:120] + de[121:]))  # de line 121 lost
    mismatch = check_parallel(tmp_path / "en", tmp_path / "de").findings[0]
    assert (mismatch.count, mismatch.first_line) == (1, 300)
    prefix = "src 300 lines, tgt 299; pairs look misaligned from about line "
    assert mismatch.detail.startswith(prefix)
    assert abs(int(mismatch.detail.removeprefix(prefix)) - 121) <= 3
    (tmp_path / "de").write_bytes(b"".join(de[:299]))  # the last line lost: nothing shifted
    mismatch = check_parallel(tmp_path / "en", tmp_path / "de").findings[0]
    assert mismatch.detail == "src 300 lines, tgt 299"
