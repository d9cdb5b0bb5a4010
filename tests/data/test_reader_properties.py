"""Each family's own-data reader and the YAML config under generated files (hypothesis, derandomized, no
deadline: no clock and no luck decides a run). A file is a shipped example changed line by line (ragged
rows, quotes, empty fields, a huge line, junk), with CRLF or CR ends, a BOM, Latin-1 or mixed encodings,
or random bytes. `attnkit init FAMILY` (the checks `attnkit train FAMILY` makes before any work) either
takes it or gives one error line naming the file (and the line, where a line is at fault); a file it
refuses leaves no run folder behind from `attnkit train FAMILY`. Never a traceback."""

from __future__ import annotations

import contextlib
import io
import re
import tempfile
from pathlib import Path

import pytest

hypothesis = pytest.importorskip("hypothesis")

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from attnkit.cli import main  # noqa: E402
from attnkit.errors import ConfigError  # noqa: E402
from attnkit.families import load_config  # noqa: E402
from own_data import EXAMPLES, sets  # noqa: E402

SETTINGS = settings(max_examples=15, deadline=None, derandomize=True, database=None, suppress_health_check=list(HealthCheck))
JUNK = ["", " ", '"', '""', '"a', 'a"b', "'", "\t", ",", ";", "{", "}", "[", "(", ")", "\\", "\x00", "é", "\ufeff", "\u2028", "x" * 70_000]
# A file's problem that no single line has (one error naming the file is the answer there).
WHOLE_FILE = re.compile(
    r"lines but|expected a Karpathy split file|no header|empty file|no (trees|captions|pairs|rows)\b|not a (file|folder|table)|no such file|one table file"
)


@st.composite
def changed(draw, example: Path, sep: str) -> bytes:
    """`example`'s bytes changed: lines replaced, inserted or dropped, then its ends, BOM and encoding; or random bytes."""
    if draw(st.integers(0, 7)) == 0:
        return draw(st.binary(max_size=300))
    lines = example.read_text(encoding="utf-8").splitlines()
    words = sorted({w for line in lines for w in re.split(r"[\s,]", line) if w})
    cell = st.one_of(st.sampled_from(words), st.sampled_from(JUNK), st.text(max_size=6))
    for _ in range(draw(st.integers(0, 4))):
        at = draw(st.integers(0, len(lines)))
        new = sep.join(draw(st.lists(cell, max_size=4)))
        action = draw(st.sampled_from(["replace", "insert", "drop"]))
        if action == "insert" or at == len(lines):
            lines.insert(at, new)
        elif action == "replace":
            lines[at] = new
        else:
            del lines[at]
    end = draw(st.sampled_from(["\n", "\r\n", "\r"]))
    text = ("\ufeff" if draw(st.booleans()) else "") + end.join(lines) + draw(st.sampled_from(["", end]))
    encoding = draw(st.sampled_from(["utf-8", "utf-8", "latin-1", "mixed"]))
    if encoding == "mixed":  # one line in Latin-1, the rest UTF-8
        cut = draw(st.integers(0, len(text)))
        return text[:cut].encode() + text[cut : cut + 40].encode("latin-1", "replace") + text[cut + 40 :].encode()
    return text.encode(encoding, "replace")


# name -> (family, the generated file's name and example, its separator, the other arguments (GEN: the generated file))
CASES = {
    "translation texts": ("translation", "train.en", EXAMPLES / "translation" / "train.en", " ",
                          ["--train", "GEN", str(EXAMPLES / "translation" / "train.de"), "--valid", str(EXAMPLES / "translation" / "valid.tsv")]),
    "translation tsv": ("translation", "train.tsv", EXAMPLES / "translation" / "train.tsv", "\t", ["--train", "GEN", "--valid", str(EXAMPLES / "translation" / "valid.tsv")]),
    "translation jsonl": ("translation", "train.jsonl", EXAMPLES / "translation" / "train.jsonl", ", ",
                          ["--train", "GEN", "--valid", str(EXAMPLES / "translation" / "valid.jsonl")]),
    "classification csv": ("classification", "train.csv", EXAMPLES / "classification" / "train.csv", ",",
                           ["--train", "GEN", "--valid", str(EXAMPLES / "classification" / "valid.csv")]),
    "classification jsonl": ("classification", "pairs.jsonl", EXAMPLES / "classification" / "pairs-train.jsonl", ", ",
                             ["--train", "GEN", "--valid", str(EXAMPLES / "classification" / "pairs-valid.jsonl")]),
    "parsing trees": ("parsing", "train.txt", EXAMPLES / "parsing" / "train.txt", " ", ["--train", "GEN", "--valid", str(EXAMPLES / "parsing" / "valid.txt")]),
    "captioning images": ("captioning", "train.txt", EXAMPLES / "captioning" / "train.txt", "\t",
                          ["--images", str(EXAMPLES / "captioning" / "images"), "--train", "GEN", "--valid", str(EXAMPLES / "captioning" / "valid.txt")]),
    "captioning split file": ("captioning", "dataset.json", EXAMPLES / "captioning" / "dataset.json", ", ",
                              ["--images", str(EXAMPLES / "captioning" / "images"), "--captions", "GEN"]),
}  # fmt: skip


def run_cli(argv: list[str]) -> tuple[int, str]:
    """`attnkit ARGV`'s status and standard error (any exception but the CLI's own answers goes up: a traceback)."""
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        status = main(argv)
    return status, err.getvalue()


def assert_one_line_naming(status: int, err: str, path: Path) -> str:
    assert status == 2, err
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("attnkit: error: "), err
    assert str(path) in lines[0], err
    return lines[0]


@pytest.mark.parametrize("case", list(CASES))
def test_a_reader_takes_a_file_or_names_its_file_and_line(case: str) -> None:
    family, name, example, sep, argv = CASES[case]
    taken: list[bytes] = []

    @SETTINGS
    @given(data=changed(example, sep))
    def check(data: bytes) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / name
            path.write_bytes(data)
            args = [str(path) if a == "GEN" else a for a in argv]
            status, err = run_cli(["init", family, *args, "--out", str(Path(tmp) / "my.yaml")])
            if status == 0:
                taken.append(data)
                return
            line = assert_one_line_naming(status, err, path)
            assert re.search(rf"{re.escape(str(path))}[^:]*\bline \d+", line) or WHOLE_FILE.search(line), line
            run = Path(tmp) / "run"
            assert run_cli(["train", family, *args, "--out", str(run)]) == (status, err)  # the same line, before any work
            assert not run.exists()

    check()
    changed_and_taken = [data for data in taken if data != example.read_bytes()]
    with tempfile.TemporaryDirectory() as tmp:  # what init takes, training takes (the last changed file, a few steps)
        path = Path(tmp) / name
        path.write_bytes(changed_and_taken[-1])
        status, err = run_cli(["train", family, *[str(path) if a == "GEN" else a for a in argv], "--out", str(Path(tmp) / "run"), *sets(family)])
        assert status == 0, err


@SETTINGS
@given(data=changed(EXAMPLES.parent / "configs" / "m30k-small.yaml", ": "))
def test_a_config_file_is_a_run_or_one_line_naming_it(data: bytes) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "my.yaml"
        path.write_bytes(data)
        try:
            load_config(path)
            return
        except ConfigError as e:
            assert str(e).startswith(str(path)) and "\n" not in str(e), str(e)
        run = Path(tmp) / "run"
        assert_one_line_naming(*run_cli(["train", str(path), "--out", str(run)]), path)
        assert not run.exists()


def test_the_generated_files_reach_both_answers() -> None:
    """The strategy is no pushover and no wall: it makes files the reader takes and files it refuses."""
    family, name, example, sep, argv = CASES["classification csv"]
    answers = set()

    @SETTINGS
    @given(data=changed(example, sep))
    def collect(data: bytes) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            (Path(tmp) / name).write_bytes(data)
            answers.add(run_cli(["init", family, *[str(Path(tmp) / name) if a == "GEN" else a for a in argv]])[0])

    collect()
    assert answers == {0, 2}
