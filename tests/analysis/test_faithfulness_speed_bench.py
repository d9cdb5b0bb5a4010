"""benchmarks/faithfulness_speed.py --ranks: one process and N torchrun ranks on the same cores, timed in turns."""

from __future__ import annotations

import os

import torch

from benchmark_scripts import load_benchmark


def test_the_ranks_share_the_one_process_threads_and_the_line_carries_the_ratio_and_machine(tmp_path, monkeypatch):
    bench = load_benchmark("faithfulness_speed")
    runs = []

    def fake(cmd: list[str], env: dict[str, str]) -> float:  # no process started: the commands and their threads
        runs.append((cmd, env.get("OMP_NUM_THREADS")))
        return 4.0 if "torch.distributed.run" in cmd else 8.0

    monkeypatch.setattr(bench, "command_seconds", fake)
    monkeypatch.setenv("OMP_NUM_THREADS", "7")  # the caller's setting is not what either side runs with
    monkeypatch.setattr(torch, "get_num_threads", lambda: 4)
    line = bench.ranks_case(10, 2, 2, tmp_path)
    assert [threads for _, threads in runs] == [None, "2", None, "2"]  # in turns: 4 threads alone, 2 per rank
    assert [cmd[cmd.index("--nproc-per-node") + 1] for cmd, _ in runs[1::2]] == ["2", "2"]
    assert (line["one_process_s"], line["ranks_s"], line["ratio"]) == (8.0, 4.0, 0.5)
    assert (line["one_process_threads"], line["threads_per_rank"], line["cores"]) == (4, 2, len(os.sched_getaffinity(0)))
    assert line["cpu"] and line["date"].endswith("UTC")
