"""`attnkit heads RUN --importance [--prune]` resumes where it stopped: after an injected stop (while scoring pairs,
while pruning) and after a real SIGTERM, the rerun computes only what importance.jsonl lacks and writes the
importance.json of an uninterrupted run; a progress file of another run, other lines or another dtype is refused."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time

import pytest

import attnkit.sources.importance as importance
from attnkit.cli import main
from attnkit.sources.importance import PROGRESS

LINES = ["t1 t2 t3\tt3 t2 t1", "t4 t5\tt5 t4", "t6 t7 t8 t9\tt9 t8", "t2 t4 t6\tt6 t4 t2"]


def _args(run, data, out, *extra: str) -> list[str]:
    return ["heads", str(run), "--input", str(data), "--out", str(out), "--importance", *extra]


def _data(tmp_path, lines=LINES, name="pairs.tsv"):
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _records(out) -> list[dict]:
    return [json.loads(line) for line in (out / PROGRESS).read_text(encoding="utf-8").splitlines()]


def _stop_on_call(monkeypatch, name: str, n: int) -> list[int]:
    """Patch `importance.NAME` to raise KeyboardInterrupt on its n-th call (as Ctrl-C would); returns the call count."""
    real, calls = getattr(importance, name), []

    def stopping(*args, **kwargs):
        calls.append(1)
        if len(calls) == n:
            raise KeyboardInterrupt
        return real(*args, **kwargs)

    monkeypatch.setattr(importance, name, stopping)
    return calls


def _counting(monkeypatch, name: str) -> list[int]:
    real, calls = getattr(importance, name), []
    monkeypatch.setattr(importance, name, lambda *a, **k: calls.append(1) or real(*a, **k))
    return calls


@pytest.fixture
def fresh(tiny_transformer_run, tmp_path) -> str:
    """importance.json of an uninterrupted run with --prune 4."""
    assert main(_args(tiny_transformer_run, _data(tmp_path), tmp_path / "fresh", "--prune", "4")) == 0
    return (tmp_path / "fresh" / "importance.json").read_text(encoding="utf-8")


def test_a_run_stopped_while_scoring_pairs_resumes_to_the_same_figures(tiny_transformer_run, tmp_path, fresh, monkeypatch, capsys):
    data, out = _data(tmp_path), tmp_path / "out"
    with monkeypatch.context() as m:
        _stop_on_call(m, "head_gradient", 3)  # two pairs done, stopped in the third
        assert main(_args(tiny_transformer_run, data, out, "--prune", "4")) == 130
    assert capsys.readouterr().err.strip().splitlines()[-1] == "attnkit: interrupted"
    assert [r.get("pair") for r in _records(out)] == [None, 0, 1]
    assert not (out / "importance.json").exists() and sorted(p.name for p in out.iterdir()) == [PROGRESS]
    with open(out / PROGRESS, "a", encoding="utf-8") as f:
        f.write('{"pair": 2, "gradient": [[0.1')  # a kill during the append
    with monkeypatch.context() as m:
        calls = _counting(m, "head_gradient")
        assert main(_args(tiny_transformer_run, data, out, "--prune", "4")) == 0
    assert len(calls) == len(LINES) - 2  # the two pairs on file are not scored again
    assert (out / "importance.json").read_text(encoding="utf-8") == fresh
    assert [r.get("pair") for r in _records(out)][: len(LINES) + 1] == [None, 0, 1, 2, 3]


def test_a_run_stopped_while_pruning_resumes_without_scoring_again(tiny_transformer_run, tmp_path, fresh, monkeypatch):
    data, out = _data(tmp_path), tmp_path / "out"
    with monkeypatch.context() as m:
        _stop_on_call(m, "mask_first", 2)  # the first step (no head masked) done
        assert main(_args(tiny_transformer_run, data, out, "--prune", "4")) == 130
    assert [r.get("masked") for r in _records(out) if "pair" not in r] == [None, 0]
    with monkeypatch.context() as m:
        gradients, masks = _counting(m, "head_gradient"), _counting(m, "mask_first")
        assert main(_args(tiny_transformer_run, data, out, "--prune", "4")) == 0
    doc = json.loads(fresh)
    assert not gradients and len(masks) == len(doc["pruning"]) - 1
    assert (out / "importance.json").read_text(encoding="utf-8") == fresh
    with monkeypatch.context() as m:  # another STEP reuses the steps on file (k = 0, 4, ...), computing only the others
        masks = _counting(m, "mask_first")
        assert main(_args(tiny_transformer_run, data, out, "--prune", "2")) == 0
    steps = json.loads((out / "importance.json").read_text(encoding="utf-8"))["pruning"]
    assert len(masks) == len([s for s in steps if s["masked"] % 4 and s["masked"] != doc["heads"]])
    assert [s for s in steps if s["masked"] % 4 == 0 or s["masked"] == doc["heads"]] == doc["pruning"]


def test_a_progress_file_of_other_lines_a_dtype_or_a_run_is_refused_in_one_line(tiny_transformer_run, tmp_path, capsys):
    from dataclasses import replace

    from attnkit.families import load_run

    data, out = _data(tmp_path), tmp_path / "out"
    assert main(_args(tiny_transformer_run, data, out)) == 0
    capsys.readouterr()
    refused = f"attnkit: error: {out / PROGRESS}: written for {{}}; cannot resume: use another --out or delete the file"
    assert main(_args(tiny_transformer_run, _data(tmp_path, LINES[:2], "other.tsv"), out)) == 2
    assert capsys.readouterr().err.strip() == refused.format("another data file")
    assert main([*_args(tiny_transformer_run, data, out), "--dtype", "bf16"]) == 2
    assert capsys.readouterr().err.strip() == refused.format("other settings")
    (out / PROGRESS).write_text("not json\n", encoding="utf-8")
    assert main(_args(tiny_transformer_run, data, out)) == 2
    assert "not a progress file of attnkit heads --importance" in capsys.readouterr().err
    loaded = load_run(tiny_transformer_run)
    header = importance.progress_header(loaded, LINES)
    other = replace(loaded, checkpoint=tmp_path / "run2" / "checkpoints" / "best")  # another run: other files
    other.checkpoint.mkdir(parents=True)
    (other.folder / "run.json").write_text("{}", encoding="utf-8")
    assert importance.progress_header(other, LINES)["model"] != header["model"]


def test_sigterm_leaves_whole_lines_and_no_temporaries_and_the_rerun_resumes(tiny_transformer_run, tmp_path, capsys):
    # A real process, stopped by SIGTERM once its first pair is on file: it ends as Ctrl-C does (exit 130, one
    # line), leaving only whole records; a rerun with the same --out finishes to the figures of an uninterrupted run.
    lines = [f"t{1 + i % 9} t{1 + (i * 7) % 9} t{1 + (i * 5) % 9}\tt{1 + (i * 3) % 9} t{1 + i % 9}" for i in range(30)]
    data, out = _data(tmp_path, lines), tmp_path / "out"
    proc = subprocess.Popen([sys.executable, "-m", "attnkit", *_args(tiny_transformer_run, data, out)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip
    deadline = time.time() + 120
    while time.time() < deadline and proc.poll() is None:
        if (out / PROGRESS).exists() and (out / PROGRESS).read_bytes().count(b"\n") >= 2:
            break
        time.sleep(0.01)
    proc.send_signal(signal.SIGTERM)
    stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130, stderr
    assert stderr.strip().splitlines()[-1] == "attnkit: interrupted" and "Traceback" not in stderr
    text = (out / PROGRESS).read_text(encoding="utf-8")
    stopped_at = len([json.loads(line) for line in text.splitlines()]) - 1  # every line whole JSON
    assert text.endswith("\n") and 1 <= stopped_at < len(lines)
    assert sorted(p.name for p in out.iterdir()) == [PROGRESS]  # no importance.json, no temporary
    assert main(_args(tiny_transformer_run, data, out)) == 0
    assert main(_args(tiny_transformer_run, data, tmp_path / "fresh")) == 0
    assert (out / "importance.json").read_text(encoding="utf-8") == (tmp_path / "fresh" / "importance.json").read_text(encoding="utf-8")
