"""The memory tables of docs/explorer.md's "Long inputs", printed as markdown from their sources.

    PYTHONPATH=src .venv/bin/python scripts/long_context_table.py [--results benchmarks/results/long_context.jsonl] [--budget 12G]

- measured: each line of the result file that `benchmarks/long_context.py --out` appends (peak
  memory, seconds, disk, and the estimate where the way was not run), one row per length and way;
- projected: Llama-3.1-8B (its published config: 32 layers, 32 query and 8 key/value heads of 128,
  hidden 4,096, intermediate 14,336, vocabulary 128,256; bf16) at 8k, 32k and 128k tokens, from the
  long road's own estimate (`sources.hf.long.budget`), kept queries and keys included, and what
  attnkit does under `--budget` (the default budget is half of the memory available).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from attnkit.errors import AttnkitError
from attnkit.sources.hf.long.budget import Plan, Shape, check, estimate, gib, parse_size

LLAMA_8B = {"layers": 32, "heads": 32, "kv_heads": 8, "head_dim": 128, "hidden": 4096, "intermediate": 14336, "vocab": 128256}
LENGTHS = (8192, 32768, 131072)


def llama_8b() -> Shape:
    c = LLAMA_8B
    per_layer = 2 * c["hidden"] * c["heads"] * c["head_dim"] + 2 * c["hidden"] * c["kv_heads"] * c["head_dim"] + 3 * c["hidden"] * c["intermediate"]
    params = c["layers"] * per_layer + 2 * c["vocab"] * c["hidden"]  # untied input and output embeddings
    return Shape(c["layers"], c["heads"], c["kv_heads"], c["head_dim"], c["hidden"], c["intermediate"], 2 * params, 2, False)


def projected(budget: int) -> list[str]:
    shape = llama_8b()
    rows = ["| tokens | weights and forward pass | kept queries and keys | blocks and one layer's results | npz | under the budget |",
            "|---|---|---|---|---|---|"]  # fmt: skip
    for n in LENGTHS:
        plan = Plan(shape.layers, 1, shape.heads)
        est = estimate(shape, n, plan)
        try:
            check("Llama-3.1-8B", shape, n, plan, budget)
            verdict = "runs"
        except AttnkitError as e:
            verdict = "refused; fits: " + str(e).split("what fits: ", 1)[1]
        rows.append(f"| {n:,} | {gib(est.forward)} | {gib(est.kept)} | {gib(est.work)} | {gib(est.disk)} | {verdict} |")
    return rows


def measured(path: Path) -> list[str]:
    rows = ["| tokens | way | peak (MiB over imports) | seconds | npz (MiB) | estimate (MiB) |", "|---|---|---|---|---|---|"]
    for line in path.read_text(encoding="utf-8").splitlines():
        r = json.loads(line)
        if r["way"] == "long_over_sdpa":
            rows.append(f"| {r['tokens']:,} | long over sdpa | +{r['extra_peak_mib']} | x{r['time_ratio']} | | |")
        elif r["measured"]:
            rows.append(f"| {r['tokens']:,} | {r['way']} | {r['peak_mib']} | {r['seconds']} | {r.get('disk_mib', '')} | {r['estimate']['memory_mib']} |")
        else:
            rows.append(f"| {r['tokens']:,} | {r['way']} (not run) | | | {r['estimate']['disk_mib']} | {r['estimate']['memory_mib']} |")
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--results", type=Path, default=Path("benchmarks/results/long_context.jsonl"))
    parser.add_argument("--budget", default="12G", help="the memory budget the projection is held to")
    args = parser.parse_args()
    if args.results.exists():
        print("\n".join(measured(args.results)) + "\n")
    print("\n".join(projected(parse_size(args.budget))))


if __name__ == "__main__":
    main()
