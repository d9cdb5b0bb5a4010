"""Attention flow at C speed: scipy's maximum flow (attnkit.analysis.flow) against networkx's, and `report --flow`.

    .venv/bin/python benchmarks/flow_speed.py [--repeat 3] [--out benchmarks/results/flow_speed.jsonl]

Cases, each the median of --repeat runs in seconds (`seconds`, every run in `runs`), with the issue's
target where it set one (`target_s`):
- `explained row`: the flow of one row (query 0, what a classifier's [CLS] reads) of a 128-token,
  12-layer input (target 2 s);
- `every row`: all rows of a 64-token, 12-layer input (target 15 s);
- `explained row` and `every row` of a 52-token, 8-layer input: the flow's own part of the next cases;
- `report --flow`, `report --flow all` and `report` (no flow, what the rest of the command costs):
  `attnkit report FOLDER TEXT [--flow [all]] --out F.html` in a fresh process, end to end (start,
  imports, load, forward pass, flow, page), on a random-weight 8-layer, 8-head BERT classifier (hidden
  512, as BERT-medium) built here from a `BertConfig`, with a WordPiece tokenizer built by `tokenizers`,
  saved with `save_pretrained`; a 52-token input (target 10 s for `--flow`); the three take turns in
  each repeat;
- `networkx baseline`: on the graph of the explained row of a 32-token, 12-layer input, the networkx
  definition attnkit had before (`networkx_flow`: `nx.maximum_flow_value` per (query, token) pair) and
  scipy's, one after the other in this run: both times, their ratio `speedup` and the largest difference;
- `edmonds_karp`: the same graph with scipy's Edmonds-Karp instead of Dinic, and the ratio.

The attention is random (softmax of seeded normal scores, 12 heads); flow reads its head mean. Every
line carries the CPU (`attnkit.precision.cpu_model`, as `attnkit doctor` says it), the 1-minute load
average when the case started (other processes share the CPU) and the date. Prints one JSON line per
case and writes them all to --out.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import torch
from torch import Tensor

from attnkit.analysis.flow import attention_flow
from attnkit.analysis.rollout import augmented
from attnkit.io import atomic_path
from attnkit.precision import cpu_model
from explorer_vs_bertviz import build_model, text_of  # beside this script: the same tiny vocabulary and tokenizer

OUT = Path(__file__).resolve().parent / "results" / "flow_speed.jsonl"


def networkx_flow(
    layers: Sequence[Tensor], heads: Sequence[int] | None = None, residual: bool = True, queries: Sequence[int] | None = None, normalise: bool = True
) -> Tensor:
    """attnkit's attention flow as it was before scipy: networkx's `maximum_flow_value` per (query, token)
    pair on a `DiGraph` of nodes (l, i) and edges (l, q) -> (l - 1, k) of capacity A'_l[q, k] > 0. (Tq, T) float64."""
    import networkx as nx

    mats = augmented(layers, heads, residual)
    graph = nx.DiGraph()
    for l, a in enumerate(mats, start=1):
        graph.add_nodes_from((l, i) for i in range(a.size(0)))
        for q, k in torch.nonzero(a > 0).tolist():
            graph.add_edge((l, q), (l - 1, k), capacity=float(a[q, k]))
    graph.add_nodes_from((0, i) for i in range(mats[0].size(1)))
    L, T = len(mats), mats[0].size(0)
    rows = list(range(T)) if queries is None else list(queries)
    out = torch.zeros(len(rows), T, dtype=torch.float64)  # (Tq, T)
    for r, q in enumerate(rows):
        for k in range(T):
            out[r, k] = nx.maximum_flow_value(graph, (L, q), (0, k))
    if normalise:
        total = out.sum(dim=-1, keepdim=True)  # (Tq, 1)
        out = torch.where(total > 0, out / total.clamp_min(1e-300), out)  # (Tq, T)
    return out  # (Tq, T)


def random_layers(tokens: int, layers: int, heads: int = 12, seed: int = 0) -> list[Tensor]:
    g = torch.Generator().manual_seed(seed)
    return [torch.softmax(torch.randn(heads, tokens, tokens, generator=g), dim=-1) for _ in range(layers)]  # (H, T, T) each


def timed(fn: Callable[[], object], repeat: int) -> tuple[float, list[float], object]:
    """(median seconds, every run's seconds, the last result)."""
    runs, result = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        result = fn()
        runs.append(time.perf_counter() - start)
    return statistics.median(runs), [round(s, 3) for s in runs], result


def stamp() -> dict:
    return {"cpu": cpu_model(), "load_1min": round(os.getloadavg()[0], 2), "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")}


def flow_case(name: str, tokens: int, layers: int, queries: list[int] | None, target: float | None, repeat: int) -> dict:
    mats = random_layers(tokens, layers)
    head = stamp()
    seconds, runs, _ = timed(lambda: attention_flow(mats, queries=queries), repeat)
    rows = tokens if queries is None else len(queries)
    return {"case": name, "tokens": tokens, "layers": layers, "rows": rows, "seconds": round(seconds, 3), "runs": runs, "target_s": target, **head}


def build_bert(folder: Path) -> Path:
    """Save the benchmark's 8-layer, 8-head random-weight BERT classifier and its WordPiece tokenizer into `folder`."""
    import transformers

    shape = {"hidden_size": 512, "num_hidden_layers": 8, "num_attention_heads": 8, "intermediate_size": 2048, "num_labels": 2}
    build_model(folder, "BertForSequenceClassification", **shape)
    assert len(transformers.AutoTokenizer.from_pretrained(folder)(text_of(52))["input_ids"]) == 52
    return folder


REPORTS = ((["--flow"], 10.0), (["--flow", "all"], None), ([], None))  # report's flow options, and the target


def report_cases(folder: Path, repeat: int) -> list[dict]:
    """`attnkit report` with each of REPORTS in a fresh process, taking turns in every repeat (so that
    they share whatever else the CPU is doing)."""
    out = folder.parent / "report.html"
    head = stamp()
    runs: list[list[float]] = [[] for _ in REPORTS]
    for _ in range(repeat):
        for i, (flow, _target) in enumerate(REPORTS):
            cmd = [sys.executable, "-m", "attnkit", "report", str(folder), text_of(52), *flow, "--out", str(out)]
            start = time.perf_counter()
            subprocess.run(cmd, check=True, capture_output=True)
            runs[i].append(time.perf_counter() - start)
    shape = {"tokens": 52, "layers": 8, "heads": 8, "hidden": 512}
    return [{"case": " ".join(["report", *flow]), **shape, "seconds": round(statistics.median(r), 3), "runs": [round(x, 3) for x in r],
             "target_s": target, **head} for (flow, target), r in zip(REPORTS, runs)]  # fmt: skip


def baseline_case(tokens: int, layers: int, repeat: int) -> list[dict]:
    """networkx against scipy's Dinic, and scipy's Edmonds-Karp against its Dinic, on one graph (the explained row)."""
    mats = random_layers(tokens, layers)
    head = stamp()
    nx_s, nx_runs, expected = timed(lambda: networkx_flow(mats, queries=[0]), repeat)
    dinic_s, dinic_runs, got = timed(lambda: attention_flow(mats, queries=[0]), repeat)
    ek_s, ek_runs, ek = timed(lambda: attention_flow(mats, queries=[0], method="edmonds_karp"), repeat)
    shape = {"tokens": tokens, "layers": layers, "rows": 1}
    return [
        {"case": "networkx baseline", **shape, "networkx_seconds": round(nx_s, 3), "networkx_runs": nx_runs, "scipy_seconds": round(dinic_s, 4),
         "scipy_runs": dinic_runs, "speedup": round(nx_s / dinic_s, 1), "max_abs_diff": float((got.double() - expected).abs().max()), **head},
        {"case": "edmonds_karp", **shape, "edmonds_karp_seconds": round(ek_s, 3), "edmonds_karp_runs": ek_runs, "dinic_seconds": round(dinic_s, 4),
         "slowdown": round(ek_s / dinic_s, 1), "max_abs_diff": float((ek - got).abs().max()), **head},
    ]  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    lines = []

    def emit(record: dict) -> None:
        lines.append(record)
        print(json.dumps(record), flush=True)

    emit(flow_case("explained row", 128, 12, [0], 2.0, args.repeat))
    emit(flow_case("every row", 64, 12, None, 15.0, args.repeat))
    emit(flow_case("explained row", 52, 8, [0], None, args.repeat))
    emit(flow_case("every row", 52, 8, None, None, args.repeat))
    with tempfile.TemporaryDirectory() as tmp:
        folder = build_bert(Path(tmp) / "bert")
        for record in report_cases(folder, args.repeat):
            emit(record)
    for record in baseline_case(32, 12, args.repeat):
        emit(record)
    with atomic_path(args.out) as tmp_path:
        tmp_path.write_text("".join(json.dumps(r) + "\n" for r in lines), encoding="utf-8")


if __name__ == "__main__":
    main()
