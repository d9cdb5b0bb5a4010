"""`attnkit heads --importance --prune` under torchrun: 2 gloo ranks split the pairs and the pruning steps, and rank
0's importance.jsonl and importance.json are the one-process files byte for byte; a rank stopped part-way is
resumed alone, and one process continues a stopped torchrun job (`launch.attnkit`: one thread a run)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from attnkit.sources.importance import PROGRESS
from launch import attnkit

# Two lines without a reference: their targets are the run's greedy outputs, found in one process's batches.
LINES = ["t1 t2 t3\tt3 t2 t1", "t4 t5", "t6 t7 t8 t9\tt9 t8", "t2 t4 t6\tt6 t4 t2", "t5 t1 t8", "t3 t3 t9\tt9 t3"]
pytestmark = pytest.mark.slow  # three torchrun jobs


def heads(run: Path, data: Path, out: Path, ranks: int = 0) -> str:
    return attnkit(["heads", str(run), "--input", str(data), "--out", str(out), "--importance", "--prune", "2"], ranks)


def lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines()


@pytest.fixture(scope="module")
def single(tiny_transformer_run, tmp_path_factory) -> tuple[Path, Path]:
    """(the pairs file, the one-process run's out folder)."""
    folder = tmp_path_factory.mktemp("importance")
    data = folder / "pairs.tsv"
    data.write_text("".join(line + "\n" for line in LINES), encoding="utf-8")
    heads(tiny_transformer_run, data, folder / "single")
    return data, folder / "single"


@pytest.fixture(scope="module")
def two(tiny_transformer_run, single, tmp_path_factory) -> tuple[Path, str]:
    """(the out folder of the same pairs over 2 ranks, what the torchrun job printed); tests that change it copy it first."""
    out = tmp_path_factory.mktemp("importance") / "two"
    return out, heads(tiny_transformer_run, single[0], out, ranks=2)


def test_two_ranks_write_the_files_of_one_process(single, two):
    (_, one), (out, done) = single, two
    assert done.count("wrote ") == 1 and "rank 1: its pairs and steps are in" in done
    assert (out / PROGRESS).read_bytes() == (one / PROGRESS).read_bytes()
    assert (out / "importance.json").read_bytes() == (one / "importance.json").read_bytes()
    merged = lines(out / PROGRESS)
    pairs, steps = merged[1 : 1 + len(LINES)], merged[1 + len(LINES) :]
    assert [json.loads(p)["pair"] for p in pairs] == list(range(len(LINES)))
    assert [json.loads(s)["masked"] for s in steps] == [0, 2, 4, 6, 8, 10, 12]  # 12 heads, 2 at a time
    for r in (0, 1):  # rank r: pairs r, r + 2, ... and steps r, r + 2, ... of the list
        shard = lines(out / f"importance.rank{r}-of-2.jsonl")
        assert shard == [merged[0], *pairs[r::2], *steps[r::2]]


def test_a_rank_stopped_part_way_is_resumed_alone(tiny_transformer_run, single, two, tmp_path):
    data, one = single
    out = tmp_path / "two"
    shutil.copytree(two[0], out)
    rank0, rank1 = out / "importance.rank0-of-2.jsonl", out / "importance.rank1-of-2.jsonl"
    full = rank1.read_text(encoding="utf-8").splitlines(keepends=True)
    rank1.write_text(full[0] + full[1] + full[2][:40], encoding="utf-8")  # killed while appending its second pair
    (out / PROGRESS).unlink()
    (out / "importance.json").unlink()
    before = (rank0.read_bytes(), rank0.stat().st_mtime_ns)
    heads(tiny_transformer_run, data, out, ranks=2)
    assert (rank0.read_bytes(), rank0.stat().st_mtime_ns) == before  # rank 0 had its pairs and steps: it computed nothing
    assert rank1.read_text(encoding="utf-8") == "".join(full)
    assert (out / PROGRESS).read_bytes() == (one / PROGRESS).read_bytes()
    assert (out / "importance.json").read_bytes() == (one / "importance.json").read_bytes()


def test_one_process_continues_a_stopped_torchrun_job(tiny_transformer_run, single, two, tmp_path):
    data, one = single
    out = tmp_path / "two"
    shutil.copytree(two[0], out)
    (out / PROGRESS).unlink()
    rank1 = out / "importance.rank1-of-2.jsonl"
    rank1.write_text(lines(rank1)[0] + "\n", encoding="utf-8")  # rank 1 had done nothing
    heads(tiny_transformer_run, data, out)
    assert (out / PROGRESS).read_bytes() == (one / PROGRESS).read_bytes()
    assert (out / "importance.json").read_bytes() == (one / "importance.json").read_bytes()
