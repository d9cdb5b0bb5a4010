"""Bad input, table-driven, through the real CLI: each case exits 2 with one line
`attnkit: error: ...` naming the input and the problem, no traceback, no partial output file.
`ACCEPTED` lists input quirks that are accepted (or skipped with a logged count) instead, and
`test_unsafe_or_broken_checkpoint_is_refused` feeds every checkpoint-loading command a pickle, a
truncated safetensors file and another model's config. The tables are docs/errors.md; keep them in
step. Adding a case is one line in a table."""

from __future__ import annotations

import gzip
import json
import logging
import os
import pickle
import shutil
import socket
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from attnkit.cli import main

GOOD_SRC = "a b c\nd e f\ng h\n"
GOOD_TGT = "c b a\nf e d\nh g\n"


@pytest.fixture
def tiny_run(tiny_trained_run) -> Path:
    """A toy-reverse run that `attnkit train` wrote (two checkpoints; conftest's, trained once a session):
    enough for every decoding command. A test that writes into it copies it first (`_copy_run`)."""
    return tiny_trained_run


def files_config(tmp: Path, src: str | bytes = GOOD_SRC, tgt: str | bytes = GOOD_TGT, extra: str = "") -> Path:
    """A word-level config over train/valid files written in `tmp`."""
    for name, text in (("train.src", src), ("train.tgt", tgt), ("valid.src", GOOD_SRC), ("valid.tgt", GOOD_TGT)):
        (tmp / name).write_bytes(text if isinstance(text, bytes) else text.encode())
    config = tmp / "c.yaml"
    config.write_text(
        f"data:\n  corpus: files\n  tokenizer: word\n  train: {{src: {tmp}/train.src, tgt: {tmp}/train.tgt}}\n"
        f"  valid: {{src: {tmp}/valid.src, tgt: {tmp}/valid.tgt}}\n"
        "model: {layers: 1, d_model: 16, n_heads: 2, d_ff: 32}\ntrain: {max_steps: 1, eval_decode: false}\n" + extra
    )
    return config


@dataclass
class Case:
    name: str
    setup: Callable[[Path, Path], list[str]]  # (tmp, run) -> argv
    message: str  # a fragment the error line must contain
    output: str | None = None  # a file (relative to tmp) that must not exist afterwards
    run: str = "tiny_run"  # the run folder `setup` gets: a fixture name (tiny_sase_run: a classifier)


def _copy_run(run: Path, tmp: Path) -> Path:
    copy = tmp / "run"
    shutil.copytree(run, copy)
    return copy


def _last_checkpoint(run: Path) -> Path:
    return sorted((run / "checkpoints").iterdir())[-1]


def _unreadable(tmp: Path) -> Path:
    """A file whose read fails: mode 000, or (as root, who ignores permissions) /proc/self/mem, whose
    first page is unmapped in every process, so reading it fails with EIO."""
    if os.geteuid() == 0:
        return Path("/proc/self/mem")
    path = _write(tmp, "unreadable.txt", "t1\n")
    path.chmod(0)
    return path


def _edit_json(tmp: Path, run: Path, edit: Callable[[dict], None]) -> Path:
    copy = _copy_run(run, tmp)
    meta = json.loads((copy / "run.json").read_text())
    edit(meta)
    (copy / "run.json").write_text(json.dumps(meta))
    return copy


def _translate_run(copy: Callable[[Path, Path], Path]) -> Callable[[Path, Path], list[str]]:
    return lambda tmp, run: ["translate", str(copy(tmp, run)), "--input", str(_write(tmp, "in.txt", "t1 t2\n"))]


def _write(tmp: Path, name: str, data: str | bytes) -> Path:
    path = tmp / name
    path.write_bytes(data if isinstance(data, bytes) else data.encode())
    return path


def _translate_input(data: str | bytes) -> Callable[[Path, Path], list[str]]:
    return lambda tmp, run: ["translate", str(run), "--input", str(_write(tmp, "in.txt", data)), "--out", str(tmp / "out.txt")]


def _evaluate(src: str | bytes, ref: str | bytes) -> Callable[[Path, Path], list[str]]:
    return lambda tmp, run: ["evaluate", str(run), "--src", str(_write(tmp, "s.txt", src)), "--ref", str(_write(tmp, "r.txt", ref))]


SASE = "tiny_sase_run"
_HELD: list[socket.socket] = []  # sockets kept open while a case runs


def _classify_input(data: str | bytes) -> Callable[[Path, Path], list[str]]:
    return lambda tmp, run: ["classify", str(run), "--input", str(_write(tmp, "in.txt", data))]


def _evaluate_data(tsv: str) -> Callable[[Path, Path], list[str]]:
    return lambda tmp, run: ["evaluate", str(run), "--labelled", str(_write(tmp, "d.tsv", tsv))]


def _busy_port() -> int:
    """A port on 127.0.0.1 that a listening socket holds."""
    held = socket.socket()
    held.bind(("127.0.0.1", 0))
    held.listen()
    _HELD.append(held)
    return held.getsockname()[1]


def _train(src: str | bytes = GOOD_SRC, tgt: str | bytes = GOOD_TGT, extra: str = "") -> Callable[[Path, Path], list[str]]:
    return lambda tmp, run: ["train", str(files_config(tmp, src, tgt, extra)), "--out", str(tmp / "out")]


def _fetch_from(tmp: Path, corrupt: bool) -> list[str]:
    source = tmp / "mirror"
    shutil.copytree(Path(__file__).resolve().parents[2].parent / "shared/data/multi30k", source)
    victim = source / "train.en.gz"
    if corrupt:
        victim.write_bytes(gzip.compress(b"tampered\n"))
    else:
        victim.unlink()
    return ["data", "fetch", "multi30k", "--out", str(tmp / "dest"), "--from", str(source)]


CASES = [
    # train: the config
    Case("config file missing", lambda tmp, run: ["train", str(tmp / "nope.yaml"), "--out", str(tmp / "out")], "nope.yaml"),
    Case("config is a directory", lambda tmp, run: ["train", str(tmp), "--out", str(tmp / "out")], "not a file"),
    Case("config is not YAML", lambda tmp, run: ["train", str(_write(tmp, "c.yaml", "model: [1,\n")), "--out", str(tmp / "out")], "c.yaml"),
    Case("unknown config key", _train(extra="extra_section: {a: 1}\n"), "extra_section"),
    Case("unknown nested key", lambda tmp, run: ["train", "toy-reverse", "--out", str(tmp / "out"), "--set", "model.d_modle=8"], "model.d_modle"),
    Case("wrong type", lambda tmp, run: ["train", "toy-reverse", "--out", str(tmp / "out"), "--set", "model.layers=three"], "model.layers"),
    Case("negative size", lambda tmp, run: ["train", "toy-reverse", "--out", str(tmp / "out"), "--set", "train.max_tokens=-5"], "train.max_tokens"),
    Case("bad --set syntax", lambda tmp, run: ["train", "toy-reverse", "--out", str(tmp / "out"), "--set", "model.layers"], "model.layers"),
    # train: the data
    Case("training file missing", lambda tmp, run: _missing_train(tmp), "train.src"),
    Case("mismatched parallel files", _train(tgt="c b a\nf e d\n"), "train.tgt"),
    Case("invalid UTF-8 in training data", _train(src=b"a b c\nd \xff f\ng h\n"), "line 2"),
    Case("empty training files", _train(src="", tgt=""), "train.src"),
    Case("training file is a directory", lambda tmp, run: _train_file_replaced(tmp, lambda path: path.mkdir()), "directory"),
    Case("training file unreadable", lambda tmp, run: _train_file_replaced(tmp, lambda path: path.symlink_to(_unreadable(tmp))), "cannot read"),
    Case("wrong type in the config file", _train(extra="train: {max_tokens: lots}\n"), "train.max_tokens"),
    Case("negative size in the config file", _train(extra="train: {max_steps: -1}\n"), "train.max_steps"),
    # train: the run folder
    Case("output is a file", lambda tmp, run: ["train", "toy-reverse", "--out", str(_write(tmp, "file", "x"))], "file"),
    Case("output not writable", lambda tmp, run: ["train", "toy-reverse", "--out", "/proc/attnkit-run"], "/proc/attnkit-run"),
    Case("--out under a file", lambda tmp, run: ["train", "toy-reverse", "--out", str(_write(tmp, "file", "x") / "run")], "file/run"),
    Case("resume without checkpoints", lambda tmp, run: ["train", "toy-reverse", "--out", str(tmp / "empty"), "--resume"], "empty"),
    Case("train over a trained run", lambda tmp, run: ["train", "toy-reverse", "--out", str(_copy_run(run, tmp))], "--resume"),
    # translate
    Case("run folder missing", lambda tmp, run: ["translate", str(tmp / "norun")], "norun"),
    Case("run folder without config.yaml", lambda tmp, run: ["translate", str(tmp)], "config.yaml"),
    Case(
        "input file missing",
        lambda tmp, run: ["translate", str(run), "--input", str(tmp / "none.txt"), "--out", str(tmp / "out.txt")],
        "none.txt",
        "out.txt",
    ),
    Case("input is a directory", lambda tmp, run: ["translate", str(run), "--input", str(tmp), "--out", str(tmp / "out.txt")], "directory", "out.txt"),
    Case("invalid UTF-8 input", _translate_input(b"t1 t2\n\xc3\x28 t3\n"), "line 2", "out.txt"),
    Case(
        "input unreadable",
        lambda tmp, run: ["translate", str(run), "--input", str(_unreadable(tmp)), "--out", str(tmp / "out.txt")],
        "cannot read",
        "out.txt",
    ),
    Case("a line of 100,000 characters", _translate_input("t1 t2\n" + "t3 " * 33_333 + "t4\n"), "in.txt, line 2: 33334 pieces", "out.txt"),
    Case(
        "--out under a file",
        lambda tmp, run: ["translate", str(run), "--input", str(_write(tmp, "in.txt", "t1\n")), "--out", str(_write(tmp, "f", "") / "out.txt")],
        "f/out.txt",
    ),
    Case("output is a directory", lambda tmp, run: ["translate", str(run), "--input", str(_write(tmp, "in.txt", "t1\n")), "--out", str(tmp)], "directory"),
    Case("nbest above beam", lambda tmp, run: ["translate", str(run), "--beam", "2", "--nbest", "3"], "nbest (3) must be <= beam (2)"),
    Case("checkpoint step missing", lambda tmp, run: ["translate", str(run), "--checkpoint", "999"], "999"),
    Case(
        "vocabulary does not match the checkpoint",
        _translate_run(lambda tmp, run: _edit_json(tmp, run, lambda m: m["src_vocab"]["tokens"].append("extra"))),
        "do not match",
    ),
    # evaluate
    Case("evaluate: source and reference differ in length", _evaluate("t1 t2\nt3\n", "t2 t1\n"), "r.txt"),
    Case(
        "evaluate: reference missing", lambda tmp, run: ["evaluate", str(run), "--src", str(_write(tmp, "s.txt", "t1\n")), "--ref", str(tmp / "r.txt")], "r.txt"
    ),
    Case("evaluate: reference not UTF-8", _evaluate("t1 t2\n", b"\xff\xfe\n"), "r.txt"),
    Case(
        "evaluate: reference is a directory",
        lambda tmp, run: ["evaluate", str(run), "--src", str(_write(tmp, "s.txt", "t1\n")), "--ref", str(tmp)],
        "directory",
    ),
    Case("evaluate: a source line of 100,000 characters", _evaluate("t3 " * 33_333 + "t4\n", "t4 t3\n"), "s.txt, line 1"),
    # average
    Case("average: more checkpoints than exist", lambda tmp, run: ["average", str(run), "--last", "50", "--out", str(tmp / "avg")], "50", "avg"),
    Case("average: zero checkpoints", lambda tmp, run: ["average", str(run), "--last", "0", "--out", str(tmp / "avg")], "--last", "avg"),
    Case("average: output under a file", lambda tmp, run: ["average", str(run), "--last", "2", "--out", str(_write(tmp, "f", "") / "avg")], "f/avg"),
    # data fetch
    # classify, embed, explain, evaluate --labelled (a sentence classifier)
    Case("classify: input file missing", lambda tmp, run: ["classify", str(run), "--input", str(tmp / "none.txt")], "none.txt", run=SASE),
    Case("classify: an empty line", _classify_input("t1 t2\n\nt3\n"), "in.txt, line 2: empty text", run=SASE),
    Case("classify: invalid UTF-8 input", _classify_input(b"t1 t2\n\xff t3\n"), "in.txt, line 2", run=SASE),
    Case("classify: a translation run", _classify_input("t1 t2\n"), "needs a classification run"),
    Case("classify: batch size 0", lambda tmp, run: ["classify", str(run), "--batch-size", "0"], "--batch-size", run=SASE),
    Case("evaluate --labelled: unknown label", _evaluate_data("text\tlabel\nt1 t2\tneg\nt3\tmaybe\n"), "line 3: unknown label 'maybe'", run=SASE),
    Case("evaluate --labelled: missing column", _evaluate_data("sentence\tlabel\nt1 t2\tneg\n"), "no column 'text'", run=SASE),
    Case("evaluate --labelled: a translation run", _evaluate_data("text\tlabel\nt1\tneg\n"), "--src FILE --ref FILE"),
    Case(
        "embed: output is a directory",
        lambda tmp, run: ["embed", str(run), "--input", str(_write(tmp, "in.txt", "t1\n")), "--out", str(tmp)],
        "directory",
        run=SASE,
    ),
    Case("explain: no sentence", lambda tmp, run: ["explain", str(run), "--out", str(tmp / "x.html")], "give a sentence", "x.html", run=SASE),
    Case("explain: --out under a file", lambda tmp, run: ["explain", str(run), "t1 t2", "--out", str(_write(tmp, "f", "") / "x.html")], "f/x.html", run=SASE),
    # serve (refused before it binds)
    Case("serve: run folder missing", lambda tmp, run: ["serve", str(tmp / "norun")], "norun"),
    Case("serve: port out of range", lambda tmp, run: ["serve", str(run), "--port", "99999"], "--port"),
    Case("serve: negative --max-texts", lambda tmp, run: ["serve", str(run), "--max-texts", "-1"], "--max-texts"),
    Case("serve: port already in use", lambda tmp, run: ["serve", str(run), "--port", str(_busy_port())], "in use"),
    Case("fetch: a file missing from the mirror", lambda tmp, run: _fetch_from(tmp, corrupt=False), "train.en.gz"),
    Case("fetch: a file with the wrong checksum", lambda tmp, run: _fetch_from(tmp, corrupt=True), "train.en.gz"),
]


def _missing_train(tmp: Path) -> list[str]:
    return _train_file_replaced(tmp, lambda path: None)


def _train_file_replaced(tmp: Path, make: Callable[[Path], None]) -> list[str]:
    """A files config whose train.src is deleted and then `make(path)`d (a directory, a link...)."""
    config = files_config(tmp)
    (tmp / "train.src").unlink()
    make(tmp / "train.src")
    return ["train", str(config), "--out", str(tmp / "out")]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_bad_input_is_one_clear_line(case: Case, request, tmp_path: Path, capsys) -> None:
    argv = case.setup(tmp_path, request.getfixturevalue(case.run))
    capsys.readouterr()
    code = main(argv)
    captured = capsys.readouterr()
    # Progress bars (a download's, drawn before its checksum is known) are not messages.
    lines = [line for line in captured.err.splitlines() if line.strip() and "%|" not in line]
    assert code == 2, (case.name, code, captured.err)
    assert len(lines) == 1 and lines[0].startswith("attnkit: error: "), captured.err
    assert case.message in lines[0], lines[0]
    if case.output:
        assert not (tmp_path / case.output).exists()
    assert not list(tmp_path.rglob(".tmp*"))


@dataclass
class Accepted:
    name: str
    setup: Callable[[Path, Path], list[str]]  # (tmp, run) -> argv
    check: Callable[[Path, Path, str], None]  # (tmp, run, log text) -> asserts what was accepted or skipped


def _same_as_plain(tmp: Path, run: Path, log: str) -> None:
    """out.txt equals the translation of the same text without BOM, CRLF or control characters."""
    plain = _write(tmp, "plain.txt", "t1 t2 t3\nt4 t5\n")
    assert main(["translate", str(run), "--input", str(plain), "--out", str(tmp / "plain-out.txt")]) == 0
    assert (tmp / "out.txt").read_text() == (tmp / "plain-out.txt").read_text()


def _vocab_is_clean(tmp: Path, run: Path, log: str) -> None:
    tokens = json.loads((tmp / "out" / "run.json").read_text())["src_vocab"]["tokens"]
    assert "a" in tokens and not [t for t in tokens if "\ufeff" in t or "\r" in t]


def _one_line_each(tmp: Path, run: Path, log: str) -> None:
    assert len((tmp / "out.txt").read_text().splitlines()) == 2


def _logged(fragment: str) -> Callable[[Path, Path, str], None]:
    def check(tmp: Path, run: Path, log: str) -> None:
        assert fragment in log, log

    return check


def _trained(tmp: Path, run: Path, log: str) -> None:
    assert (tmp / "out" / "checkpoints").is_dir()


ACCEPTED = [
    Accepted("translate: BOM and CRLF line ends", _translate_input(b"\xef\xbb\xbft1 t2 t3\r\nt4 t5\r\n"), _same_as_plain),
    Accepted("translate: control characters", _translate_input("t1 t2\x07 t3\n\x1b[31mt4\x00 t5\n"), _one_line_each),
    Accepted(
        "train: BOM and CRLF line ends", _train(src=b"\xef\xbb\xbfa b c\r\nd e f\r\ng h\r\n", tgt=b"\xef\xbb\xbfc b a\r\nf e d\r\nh g\r\n"), _vocab_is_clean
    ),
    Accepted(
        "train: a line of 100,000 characters is skipped and counted",
        _train(src="a b c\n" + "x " * 50_000 + "\ng h\n"),
        _logged("skipped 1 lines: too_long 1 (first line 2)"),
    ),  # fmt: skip
    Accepted("train: control characters", _train(src="a b\x07 c\nd \x00e f\ng h\n"), _trained),
]


@pytest.mark.parametrize("case", ACCEPTED, ids=[c.name for c in ACCEPTED])
def test_accepted_input_quirks(case: Accepted, tiny_run: Path, tmp_path: Path, capsys, caplog) -> None:
    caplog.set_level(logging.INFO, logger="attnkit")
    assert main(case.setup(tmp_path, tiny_run)) == 0, capsys.readouterr().err
    case.check(tmp_path, tiny_run, caplog.text)
    assert not list(tmp_path.rglob(".tmp*"))


def _pickle_everywhere(checkpoint: Path, marker: Path) -> None:
    """Every file of the checkpoint becomes a pickle that would create `marker` if unpickled."""

    class Payload:
        def __reduce__(self):
            return (exec, (f"import pathlib; pathlib.Path({str(marker)!r}).touch()",))

    for f in checkpoint.iterdir():
        f.write_bytes(pickle.dumps(Payload()))


def _truncate(checkpoint: Path, marker: Path) -> None:
    weights = checkpoint / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[: weights.stat().st_size // 2])


def _other_model_kind(checkpoint: Path, marker: Path) -> None:
    config = checkpoint.parents[1] / "config.yaml"
    config.write_text(config.read_text().replace("kind: transformer", "kind: rnn"))


DAMAGE = {"pickle": (_pickle_everywhere, "model.safetensors"), "truncated safetensors": (_truncate, "model.safetensors"),
          "another model's config": (_other_model_kind, "config.yaml")}  # fmt: skip
LOADERS: dict[str, Callable[[Path, Path], list[str]]] = {
    "translate": lambda tmp, run: ["translate", str(run), "--checkpoint", "last", "--input", str(_write(tmp, "in.txt", "t1 t2\n"))],
    "evaluate": lambda tmp, run: [
        "evaluate",
        str(run),
        "--checkpoint",
        "last",
        "--src",
        str(_write(tmp, "s.txt", "t1\n")),
        "--ref",
        str(_write(tmp, "r.txt", "t1\n")),
    ],
    "average": lambda tmp, run: ["average", str(run), "--last", "1", "--out", str(tmp / "avg")],
    "train --resume": lambda tmp, run: ["train", str(run / "config.yaml"), "--out", str(run), "--resume"],
}


@pytest.mark.parametrize("loader", LOADERS)
@pytest.mark.parametrize("damage", DAMAGE)
def test_unsafe_or_broken_checkpoint_is_refused(damage: str, loader: str, tiny_run: Path, tmp_path: Path, capsys) -> None:
    """Loading never unpickles: the pickle's marker file never appears; each case is one line."""
    run = _copy_run(tiny_run, tmp_path)
    marker = tmp_path / "pickle-ran"
    spoil, message = DAMAGE[damage]
    spoil(_last_checkpoint(run), marker)
    capsys.readouterr()
    code = main(LOADERS[loader](tmp_path, run))
    lines = [line for line in capsys.readouterr().err.splitlines() if line.strip() and "%|" not in line]
    assert code == 2 and len(lines) == 1 and lines[0].startswith("attnkit: error: "), lines
    assert message in lines[0], lines[0]
    assert not marker.exists()
    assert not (tmp_path / "avg" / "checkpoints").exists()
    if damage == "pickle":  # the payload is live: unpickling it does run code
        pickle.loads((_last_checkpoint(run) / "model.safetensors").read_bytes())
        assert marker.exists()


def test_no_traceback_from_a_real_process(tmp_path: Path) -> None:
    """The same through `python -m attnkit` (what a user runs): exit 2, one line, no traceback."""
    bad = _write(tmp_path, "bad.yaml", "model: {layers: -1}\n")
    result = subprocess.run([sys.executable, "-m", "attnkit", "train", str(bad), "--out", str(tmp_path / "o")], capture_output=True, text=True)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert result.stderr.strip().count("\n") == 0 and "model.layers" in result.stderr
