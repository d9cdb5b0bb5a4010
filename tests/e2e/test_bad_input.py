"""Bad input, table-driven, through the real CLI: each case exits 2 with one line
`attnkit: error: ...` naming the input and the problem, no traceback, no partial output file.
The table is docs/errors.md; keep the two in step."""

from __future__ import annotations

import gzip
import json
import pickle
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from attnkit.cli import main

GOOD_SRC = "a b c\nd e f\ng h\n"
GOOD_TGT = "c b a\nf e d\nh g\n"


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory) -> Path:
    """A toy-reverse run trained for 4 updates (two checkpoints): enough for every decoding command."""
    out = tmp_path_factory.mktemp("bad") / "run"
    sets = ["train.max_steps=4", "train.eval_every=2", "train.eval_bleu=false", "train.log_every=1"]
    assert main(["train", "toy-reverse", "--out", str(out), *[a for s in sets for a in ("--set", s)]]) == 0
    return out


def files_config(tmp: Path, src: str | bytes = GOOD_SRC, tgt: str | bytes = GOOD_TGT, extra: str = "") -> Path:
    """A word-level config over train/valid files written in `tmp`."""
    for name, text in (("train.src", src), ("train.tgt", tgt), ("valid.src", GOOD_SRC), ("valid.tgt", GOOD_TGT)):
        (tmp / name).write_bytes(text if isinstance(text, bytes) else text.encode())
    config = tmp / "c.yaml"
    config.write_text(
        f"data:\n  corpus: files\n  tokenizer: word\n  train: {{src: {tmp}/train.src, tgt: {tmp}/train.tgt}}\n"
        f"  valid: {{src: {tmp}/valid.src, tgt: {tmp}/valid.tgt}}\n"
        "model: {layers: 1, d_model: 16, n_heads: 2, d_ff: 32}\ntrain: {max_steps: 1, eval_bleu: false}\n" + extra
    )
    return config


@dataclass
class Case:
    name: str
    setup: Callable[[Path, Path], list[str]]  # (tmp, run) -> argv
    message: str  # a fragment the error line must contain
    output: str | None = None  # a file (relative to tmp) that must not exist afterwards


def _copy_run(run: Path, tmp: Path) -> Path:
    copy = tmp / "run"
    shutil.copytree(run, copy)
    return copy


def _last_checkpoint(run: Path) -> Path:
    return sorted((run / "checkpoints").iterdir())[-1]


def _replace_weights(tmp: Path, run: Path, data: bytes) -> list[str]:
    copy = _copy_run(run, tmp)
    for checkpoint in (copy / "checkpoints").iterdir():
        (checkpoint / "model.safetensors").write_bytes(data)
    (tmp / "in.txt").write_text("t1 t2\n")
    return ["translate", str(copy), "--input", str(tmp / "in.txt")]


def _truncate_weights(tmp: Path, run: Path) -> list[str]:
    data = (_last_checkpoint(run) / "model.safetensors").read_bytes()
    return _replace_weights(tmp, run, data[: len(data) // 2])


class _Boom:
    def __reduce__(self):
        return (print, ("pickle code ran",))


def _edit_json(tmp: Path, run: Path, edit: Callable[[dict], None]) -> list[str]:
    copy = _copy_run(run, tmp)
    meta = json.loads((copy / "run.json").read_text())
    edit(meta)
    (copy / "run.json").write_text(json.dumps(meta))
    (tmp / "in.txt").write_text("t1 t2\n")
    return ["translate", str(copy), "--input", str(tmp / "in.txt")]


def _other_model_kind(tmp: Path, run: Path) -> list[str]:
    copy = _copy_run(run, tmp)
    (copy / "config.yaml").write_text((copy / "config.yaml").read_text().replace("kind: transformer", "kind: rnn"))
    (tmp / "in.txt").write_text("t1 t2\n")
    return ["translate", str(copy), "--input", str(tmp / "in.txt")]


def _write(tmp: Path, name: str, data: str | bytes) -> Path:
    path = tmp / name
    path.write_bytes(data if isinstance(data, bytes) else data.encode())
    return path


def _translate_input(data: str | bytes) -> Callable[[Path, Path], list[str]]:
    return lambda tmp, run: ["translate", str(run), "--input", str(_write(tmp, "in.txt", data)), "--output", str(tmp / "out.txt")]


def _evaluate(src: str | bytes, ref: str | bytes) -> Callable[[Path, Path], list[str]]:
    return lambda tmp, run: ["evaluate", str(run), "--src", str(_write(tmp, "s.txt", src)), "--ref", str(_write(tmp, "r.txt", ref))]


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
    return ["data", "fetch", "multi30k", "--dest", str(tmp / "dest"), "--from", str(source)]


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
    # train: the run folder
    Case("output is a file", lambda tmp, run: ["train", "toy-reverse", "--out", str(_write(tmp, "file", "x"))], "file"),
    Case("output not writable", lambda tmp, run: ["train", "toy-reverse", "--out", "/proc/attnkit-run"], "/proc/attnkit-run"),
    Case("resume without checkpoints", lambda tmp, run: ["train", "toy-reverse", "--out", str(tmp / "empty"), "--resume"], "empty"),
    Case("train over a trained run", lambda tmp, run: ["train", "toy-reverse", "--out", str(_copy_run(run, tmp))], "--resume"),
    # translate
    Case("run folder missing", lambda tmp, run: ["translate", str(tmp / "norun")], "norun"),
    Case("run folder without config.yaml", lambda tmp, run: ["translate", str(tmp)], "config.yaml"),
    Case("input file missing", lambda tmp, run: ["translate", str(run), "--input", str(tmp / "none.txt"), "--output", str(tmp / "out.txt")], "none.txt", "out.txt"),
    Case("input is a directory", lambda tmp, run: ["translate", str(run), "--input", str(tmp), "--output", str(tmp / "out.txt")], "directory", "out.txt"),
    Case("invalid UTF-8 input", _translate_input(b"t1 t2\n\xc3\x28 t3\n"), "line 2", "out.txt"),
    Case("output is a directory", lambda tmp, run: ["translate", str(run), "--input", str(_write(tmp, "in.txt", "t1\n")), "--output", str(tmp)], "directory"),
    Case("nbest above beam", lambda tmp, run: ["translate", str(run), "--beam", "2", "--nbest", "3"], "--nbest"),
    Case("checkpoint step missing", lambda tmp, run: ["translate", str(run), "--checkpoint", "999"], "999"),
    Case("truncated safetensors", _truncate_weights, "model.safetensors"),
    Case("pickle instead of safetensors", lambda tmp, run: _replace_weights(tmp, run, pickle.dumps(_Boom())), "model.safetensors"),
    Case("checkpoint's config of another model type", _other_model_kind, "config.yaml"),
    Case("vocabulary does not match the checkpoint", lambda tmp, run: _edit_json(tmp, run, lambda m: m["src_vocab"]["tokens"].append("extra")), "do not match"),
    # evaluate
    Case("evaluate: source and reference differ in length", _evaluate("t1 t2\nt3\n", "t2 t1\n"), "r.txt"),
    Case("evaluate: reference missing", lambda tmp, run: ["evaluate", str(run), "--src", str(_write(tmp, "s.txt", "t1\n")), "--ref", str(tmp / "r.txt")], "r.txt"),
    Case("evaluate: reference not UTF-8", _evaluate("t1 t2\n", b"\xff\xfe\n"), "r.txt"),
    # average
    Case("average: more checkpoints than exist", lambda tmp, run: ["average", str(run), "--last", "50", "--out", str(tmp / "avg")], "50", "avg"),
    Case("average: zero checkpoints", lambda tmp, run: ["average", str(run), "--last", "0", "--out", str(tmp / "avg")], "--last", "avg"),
    # data fetch
    Case("fetch: a file missing from the mirror", lambda tmp, run: _fetch_from(tmp, corrupt=False), "train.en.gz"),
    Case("fetch: a file with the wrong checksum", lambda tmp, run: _fetch_from(tmp, corrupt=True), "train.en.gz"),
]


def _missing_train(tmp: Path) -> list[str]:
    config = files_config(tmp)
    (tmp / "train.src").unlink()
    return ["train", str(config), "--out", str(tmp / "out")]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_bad_input_is_one_clear_line(case: Case, tiny_run: Path, tmp_path: Path, capsys) -> None:
    argv = case.setup(tmp_path, tiny_run)
    capsys.readouterr()
    code = main(argv)
    captured = capsys.readouterr()
    # Progress bars (a download's, drawn before its checksum is known) are not messages.
    lines = [line for line in captured.err.splitlines() if line.strip() and "%|" not in line]
    assert code == 2, (case.name, code, captured.err)
    assert len(lines) == 1 and lines[0].startswith("attnkit: error: "), captured.err
    assert case.message in lines[0], lines[0]
    assert "pickle code ran" not in captured.out
    if case.output:
        assert not (tmp_path / case.output).exists()
    assert not list(tmp_path.rglob(".tmp*"))


def test_no_traceback_from_a_real_process(tmp_path: Path) -> None:
    """The same through `python -m attnkit` (what a user runs): exit 2, one line, no traceback."""
    bad = _write(tmp_path, "bad.yaml", "model: {layers: -1}\n")
    result = subprocess.run([sys.executable, "-m", "attnkit", "train", str(bad), "--out", str(tmp_path / "o")], capture_output=True, text=True)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert result.stderr.strip().count("\n") == 0 and "model.layers" in result.stderr
