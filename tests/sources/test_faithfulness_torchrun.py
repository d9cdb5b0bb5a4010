"""`attnkit faithfulness` under torchrun: 2 gloo ranks on the CPU split the texts, and rank 0's examples.jsonl
and summary are the ones a single process writes; a rank stopped part-way is resumed alone.

Every run computes on one thread (`launch.attnkit`, as torchrun gives each rank), so that the one-process run and
the ranks compute each text with the same kernels and the lines can be compared byte for byte.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from attnkit.sources.faithfulness import EXAMPLES
from launch import attnkit

TEXTS = ["t1 t2 t3 t4 t5", "t9 t8 t7", "t3 t3 t1 t0 t6 t2 t2 t8 t9 t1 t4", "t2 t4 t6", "t5 t1 t8 t8 t0 t3"]
METHODS = ["attention", "ixg", "ig", "loo", "random"]


def faithfulness(run: Path, data: Path, out: Path, ranks: int = 0) -> str:
    """`attnkit faithfulness` in this process, or under `torchrun --standalone --nproc-per-node ranks`."""
    return attnkit(["faithfulness", str(run), "--input", str(data), "--out", str(out), "--methods", *METHODS], ranks)


@pytest.fixture(scope="module")
def single(tiny_sase_run, tmp_path_factory) -> tuple[Path, Path]:
    """(the data file, the one-process run's out folder)."""
    folder = tmp_path_factory.mktemp("faith")
    data = folder / "texts.txt"
    data.write_text("".join(t + "\n" for t in TEXTS), encoding="utf-8")
    faithfulness(tiny_sase_run, data, folder / "single")
    return data, folder / "single"


@pytest.fixture(scope="module")
def two(tiny_sase_run, single, tmp_path_factory) -> tuple[Path, str]:
    """(the out folder of the same texts over 2 ranks, what the torchrun job printed); tests that change it copy it first."""
    out = tmp_path_factory.mktemp("faith") / "two"
    return out, faithfulness(tiny_sase_run, single[0], out, ranks=2)


def test_two_ranks_write_the_lines_and_summary_of_one_process(single, two):
    (_, one), (out, done) = single, two
    assert done.count("wrote ") == 1 and "rank 1: its texts are in" in done  # rank 0 writes the summary
    lines = (out / EXAMPLES).read_text(encoding="utf-8").splitlines()
    assert lines == (one / EXAMPLES).read_text(encoding="utf-8").splitlines() and len(lines) == 1 + len(TEXTS)
    for r, indices in ((0, [0, 2, 4]), (1, [1, 3])):  # rank r: texts r, r + 2, ...
        shard = (out / f"examples.rank{r}-of-2.jsonl").read_text(encoding="utf-8").splitlines()
        assert shard[0] == lines[0] and shard[1:] == [lines[1 + i] for i in indices]
    assert (out / "faithfulness.json").read_text() == (one / "faithfulness.json").read_text()


def test_a_rank_stopped_part_way_is_resumed_alone(tiny_sase_run, single, two, tmp_path):
    data, one = single
    out = tmp_path / "two"
    shutil.copytree(two[0], out)
    rank0, rank1 = out / "examples.rank0-of-2.jsonl", out / "examples.rank1-of-2.jsonl"
    lines = rank1.read_text(encoding="utf-8").splitlines(keepends=True)
    rank1.write_text(lines[0] + lines[1] + lines[2][:40], encoding="utf-8")  # killed while appending its second text
    (out / EXAMPLES).unlink()
    before = (rank0.read_bytes(), rank0.stat().st_mtime_ns)
    faithfulness(tiny_sase_run, data, out, ranks=2)
    assert (rank0.read_bytes(), rank0.stat().st_mtime_ns) == before  # rank 0 had its texts: it scored nothing
    assert rank1.read_text(encoding="utf-8") == "".join(lines)
    assert (out / EXAMPLES).read_text(encoding="utf-8") == (one / EXAMPLES).read_text(encoding="utf-8")


def test_one_process_continues_a_stopped_torchrun_job(tiny_sase_run, single, two, tmp_path):
    data, one = single
    out = tmp_path / "two"
    shutil.copytree(two[0], out)
    (out / EXAMPLES).unlink()
    rank1 = out / "examples.rank1-of-2.jsonl"
    rank1.write_text(rank1.read_text(encoding="utf-8").splitlines(keepends=True)[0], encoding="utf-8")  # rank 1 scored nothing
    faithfulness(tiny_sase_run, data, out)
    assert (out / EXAMPLES).read_text(encoding="utf-8") == (one / EXAMPLES).read_text(encoding="utf-8")
    assert json.loads((out / "faithfulness.json").read_text())["outputs"] == len(TEXTS)
