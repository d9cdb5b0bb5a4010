"""What the long road would take for Llama-3.1-8B at 8k, 32k and 128k tokens, by the memory guard's own estimate.

    PYTHONPATH=src .venv/bin/python scripts/long_context_projection.py [--budget 32G] [--out benchmarks/results/long_context_projection.jsonl]

The model is built from Llama-3.1-8B's published config (32 layers, 32 query and 8 key/value heads
of 128, hidden 4,096, intermediate 14,336, vocabulary 128,256; bf16) on the meta device (no weights
are allocated), and `sources.hf.long.budget` reads its shape as it reads any model's (`shape_of`).
For each length, one JSON line: the estimate's terms (weights, the forward pass's activations, the
kept queries and keys, the blocks and one layer's results, the npz), the peak in memory and with the
kept queries and keys spilled to disk, and what attnkit does under `--budget` (`budget.check`: in
memory, spilled, or refused with what fits). Nothing is measured (`"measured": false`); docs/explorer.md
shows the file as a table.
"""

from __future__ import annotations

import argparse
import datetime
import json
from pathlib import Path

LLAMA_8B = {"num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8, "head_dim": 128, "hidden_size": 4096,
            "intermediate_size": 14336, "vocab_size": 128256, "max_position_embeddings": 131072, "tie_word_embeddings": False}  # fmt: skip
LENGTHS = (8192, 32768, 131072)
OUT = Path(__file__).resolve().parents[1] / "benchmarks" / "results" / "long_context_projection.jsonl"


def llama_8b():
    """Llama-3.1-8B's shape, from its config, in bf16."""
    import torch
    import transformers

    from attnkit.sources.hf.long.budget import shape_of

    with torch.device("meta"):
        model = transformers.LlamaForCausalLM(transformers.LlamaConfig(**LLAMA_8B, torch_dtype=torch.bfloat16)).to(torch.bfloat16)
    return shape_of(model)


def verdict(shape, n: int, plan, budget: int) -> str:
    from attnkit.errors import AttnkitError
    from attnkit.sources.hf.long.budget import check

    try:
        est = check("Llama-3.1-8B", shape, n, plan, budget)
    except AttnkitError as e:
        return "refused; fits: " + str(e).split("what fits: ", 1)[1]
    return "spills the kept queries and keys to disk" if est.spilled else "runs in memory"


def lines(budget: int) -> list[dict]:
    from attnkit.sources.hf.long.budget import GiB, Plan, estimate

    shape = llama_8b()
    plan = Plan(shape.layers, 1, shape.heads)
    date = datetime.date.today().isoformat()
    out = []
    for n in LENGTHS:
        est, spilled = estimate(shape, n, plan), estimate(shape, n, plan, spill=True)
        out.append({"model": "Llama-3.1-8B", "dtype": "bfloat16", "tokens": n, "measured": False, "weights_gib": shape.weights / GiB,
                    "activations_gib": est.activations / GiB, "kept_gib": est.kept / GiB, "work_gib": est.work / GiB,
                    "memory_gib": est.memory / GiB, "spilled_memory_gib": spilled.memory / GiB, "npz_gib": est.disk / GiB,
                    "budget_gib": budget / GiB, "attnkit": verdict(shape, n, plan, budget), "date": date})  # fmt: skip
    return out


def main() -> None:
    from attnkit.sources.hf.long.budget import parse_size

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--budget", default="32G", help="the memory budget (--max-memory) the projection is held to")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    found = lines(parse_size(args.budget))
    args.out.write_text("".join(json.dumps(line) + "\n" for line in found), encoding="utf-8")
    for line in found:
        print(json.dumps(line))


if __name__ == "__main__":
    main()
