"""`attnkit attention SOURCE --input FILE --out DIR`: one npz per line, named by line number, and DIR/index.jsonl.

Each npz is the one `attnkit attention SOURCE TEXT` writes for that line; a run stopped by a real SIGTERM leaves
whole files only and its rerun equals an uninterrupted run; 2 torchrun ranks (gloo) write the files of one
process, and a rank stopped part-way is resumed alone; another model, file or settings into the same DIR, a bad
file and a .npz --out are refused in one line. The runs that are compared byte for byte compute on one
thread each (`launch.attnkit`).
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import attnkit.sources as sources
from attnkit.cli import main
from attnkit.sources.inputs import INDEX
from launch import ENV, attnkit

# 30 lines, the 4th blank: 29 inputs, files named by line number (no 000004.npz).
LINES = [f"t{1 + i % 9} t{1 + (i * 7) % 9} t{1 + (i * 5) % 9}" if i != 3 else "" for i in range(30)]
NUMBERS = [n for n, line in enumerate(LINES, 1) if line]


def attention(run: Path, data: Path, out: Path, ranks: int = 0) -> str:
    return attnkit(["attention", str(run), "--input", str(data), "--out", str(out)], ranks)


def files(out: Path) -> dict[str, bytes]:
    """Every file of OUT but the ranks' index files, by name."""
    return {p.name: p.read_bytes() for p in sorted(out.iterdir()) if ".rank" not in p.name}


@pytest.fixture(scope="module")
def single(tiny_transformer_run, tmp_path_factory) -> tuple[Path, Path]:
    """(the input file, the out folder of an uninterrupted one-process run)."""
    folder = tmp_path_factory.mktemp("inputs")
    data = folder / "texts.txt"
    data.write_text("".join(line + "\n" for line in LINES), encoding="utf-8")
    attention(tiny_transformer_run, data, folder / "single")
    return data, folder / "single"


@pytest.mark.slow
def test_one_npz_per_line_as_attention_writes_it_and_an_index(tiny_transformer_run, single, tmp_path):
    _, out = single
    assert sorted(files(out)) == sorted([INDEX] + [f"{n:06d}.npz" for n in NUMBERS])
    attnkit(["attention", str(tiny_transformer_run), LINES[4], "--out", str(tmp_path / "one.npz")])
    assert (out / "000005.npz").read_bytes() == (tmp_path / "one.npz").read_bytes()
    header, *records = [json.loads(line) for line in (out / INDEX).read_text(encoding="utf-8").splitlines()]
    assert header["attnkit_attention"] == 1 and set(header) == {"attnkit_attention", "model", "data", "settings"}
    assert [(r["line"], r["file"]) for r in records] == [(n, f"{n:06d}.npz") for n in NUMBERS]
    assert all(r["kinds"] == {"encoder": 2, "decoder_self": 2, "cross": 2} and r["tokens"] == 4 for r in records)  # 3 words and </s>


@pytest.mark.slow
def test_two_ranks_write_the_files_of_one_process_and_a_stopped_rank_resumes_alone(tiny_transformer_run, single, tmp_path):
    data, one = single
    out = tmp_path / "two"
    done = attention(tiny_transformer_run, data, out, ranks=2)
    assert done.count('"inputs": 29') == 1 and "rank 1: its inputs are listed in" in done
    assert files(out) == files(one)
    index = (one / INDEX).read_text(encoding="utf-8").splitlines(keepends=True)
    for r in (0, 1):  # rank r: inputs r, r + 2, ...
        assert (out / f"index.rank{r}-of-2.jsonl").read_text(encoding="utf-8") == index[0] + "".join(index[1 + r :: 2])
    rank0, rank1 = out / "index.rank0-of-2.jsonl", out / "index.rank1-of-2.jsonl"
    rank1.write_text(index[0] + index[2] + index[4][:30], encoding="utf-8")  # killed while appending its second input
    mine = NUMBERS[1::2]
    for name in (INDEX, f"{mine[1]:06d}.npz", f"{mine[2]:06d}.npz"):  # its second input's npz was not written yet, nor its third's
        (out / name).unlink()
    before = (rank0.read_bytes(), rank0.stat().st_mtime_ns)
    attention(tiny_transformer_run, data, out, ranks=2)
    assert (rank0.read_bytes(), rank0.stat().st_mtime_ns) == before  # rank 0 had its inputs: it wrote nothing
    assert files(out) == files(one)


@pytest.mark.slow
def test_sigterm_leaves_whole_files_and_the_rerun_equals_an_uninterrupted_run(tiny_transformer_run, single, tmp_path):
    data, one = single
    out = tmp_path / "out"
    cmd = [sys.executable, "-m", "attnkit", "attention", str(tiny_transformer_run), "--input", str(data), "--out", str(out)]
    proc = subprocess.Popen(cmd, env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 120
    while time.time() < deadline and proc.poll() is None:
        if (out / INDEX).exists() and (out / INDEX).read_bytes().count(b"\n") >= 2:  # the header and one input
            break
        time.sleep(0.01)
    proc.send_signal(signal.SIGTERM)
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130, stderr
    assert stderr.strip().splitlines()[-1] == "attnkit: interrupted" and "Traceback" not in stderr
    text = (out / INDEX).read_text(encoding="utf-8")
    listed = [json.loads(line)["file"] for line in text.splitlines()[1:]]  # every line whole JSON
    written = sorted(p.name for p in out.glob("*.npz"))
    assert text.endswith("\n") and 1 <= len(listed) < len(NUMBERS)
    assert set(listed) <= set(written) and len(written) <= len(listed) + 1  # at most one npz written before its line
    assert sorted(p.name for p in out.iterdir()) == sorted([INDEX, *written])  # no temporary
    for name in written:  # whole: as the uninterrupted run wrote it
        assert (out / name).read_bytes() == (one / name).read_bytes()
    attention(tiny_transformer_run, data, out)
    assert files(out) == files(one)


def test_a_rerun_skips_what_is_done_and_clears_a_killed_run_s_temporaries(tiny_transformer_run, tmp_path, monkeypatch, capsys):
    data, out = tmp_path / "texts.txt", tmp_path / "out"
    data.write_text("t1 t2\n\nt3 t4 t5\n", encoding="utf-8")
    assert main(["attention", str(tiny_transformer_run), "--input", str(data), "--out", str(out)]) == 0
    assert json.loads(capsys.readouterr().out) == {"out": str(out), "index": str(out / INDEX), "inputs": 2}
    before = files(out)
    (out / ".000003.npz.abcd1234.tmp").write_bytes(b"half")  # what a SIGKILL mid-write leaves
    calls = []
    monkeypatch.setattr(sources, "write_attention", lambda *a, **k: calls.append(1))
    assert main(["attention", str(tiny_transformer_run), "--input", str(data), "--out", str(out)]) == 0
    assert not calls and files(out) == before and sorted(p.name for p in out.iterdir()) == ["000001.npz", "000003.npz", INDEX]


@pytest.mark.parametrize(
    ("content", "message"),
    [(b"t1 t2\nt3 \xff\n", "line 2: invalid UTF-8 (byte 0xff at column 4)"), (b"", "empty file"), (b"\n \n", "no inputs (every line is blank)")],
)
def test_a_bad_file_is_refused_in_one_line(tiny_transformer_run, tmp_path, capsys, content, message):
    data = tmp_path / "texts.txt"
    data.write_bytes(content)
    assert main(["attention", str(tiny_transformer_run), "--input", str(data), "--out", str(tmp_path / "out")]) == 2
    assert capsys.readouterr().err.strip().splitlines() == [f"attnkit: error: {data}{',' if message.startswith('line') else ':'} {message}"]


def test_other_arguments_into_the_same_folder_are_refused_in_one_line(tiny_transformer_run, tiny_sase_run, tmp_path, capsys):
    data, other, out = tmp_path / "texts.txt", tmp_path / "other.txt", tmp_path / "out"
    data.write_text("t1 t2\n", encoding="utf-8")
    other.write_text("t1 t3\n", encoding="utf-8")
    assert main(["attention", str(tiny_transformer_run), "--input", str(data), "--out", str(out)]) == 0
    capsys.readouterr()
    before = files(out)
    refused = f"attnkit: error: {out / INDEX}: written for {{}}; cannot resume: use another --out or delete the file"
    for args, what in (
        ([str(tiny_transformer_run), "--words"], "other settings"),
        ([str(tiny_sase_run)], "another model"),
        ([str(tiny_transformer_run)], "another data file"),
    ):
        given = other if what == "another data file" else data
        assert main(["attention", *args, "--input", str(given), "--out", str(out)]) == 2
        assert capsys.readouterr().err.strip().splitlines() == [refused.format(what)]
    assert files(out) == before
    assert main(["attention", str(tiny_transformer_run), "t3", "--input", str(data), "--out", str(out)]) == 2
    assert capsys.readouterr().err.strip() == f"attnkit: error: --input {data} takes its inputs from the file, one a line; leave out a TEXT"


def test_a_npz_out_is_refused(tiny_transformer_run, tmp_path, capsys):
    data = tmp_path / "texts.txt"
    data.write_text("t1 t2\n", encoding="utf-8")
    assert main(["attention", str(tiny_transformer_run), "--input", str(data), "--out", str(tmp_path / "maps.npz")]) == 2
    assert capsys.readouterr().err.strip() == f"attnkit: error: {tmp_path / 'maps.npz'}: --input writes one .npz per line into a folder: give --out DIR"
