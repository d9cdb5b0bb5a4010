"""Attention at length, side by side: attnkit's long road against the eager road, `output_attentions` and inseq.

    PYTHONPATH=src .venv/bin/python benchmarks/long_context.py [--lengths 2048 8192 32768] [--ways ...] [--cache ~/.cache/attnkit-vs] [--out FILE.jsonl]

(--out appends: remove benchmarks/results/long_context.jsonl first to regenerate it.)

Run it alone on the machine (it times and measures memory). The model is a tiny random Llama (4
layers, 4 query heads, 2 key/value heads, hidden 128, intermediate 256, vocabulary 512; float32;
logits for the last position only, no key/value cache) reading --lengths random token ids. Each way
runs in a fresh process, with glibc's mmap threshold held as the long road holds it
(`budget.release_freed_memory`), and reports its peak resident set size over the size it had after its
imports and the same way once at 16 tokens (the libraries' lazy imports and first calls), from
getrusage's ru_maxrss, its seconds and the bytes it wrote:

- `sdpa`: the forward pass the long road runs, with transformers' SDPA attention (the floor);
- `long`: `attnkit attention --long`'s road (`sources.hf.long.export.write_ids`): summaries,
  pooled maps with and without the sink, the last token's exact rows and rollout row, into an npz,
  with its own estimate of memory and disk (`sources.hf.long.budget`) beside the measurement;
- `eager`: attnkit's eager road (every layer's (H, N, N) map streamed into an npz, `sources.hf.collect`);
- `output_attentions`: transformers' eager `output_attentions=True`, every layer at once, as numpy;
- `inseq`: inseq 0.7.1's `attention` method on the next token, as its users run it, in its own environment
  (transformers 4, made by `vs_tools.inseq_env` under --cache on first use), by
  `vs_tools_envs/inseq_long.py` (same config, seed and ids: it stops unless its state dict's hash is the
  other ways' and inseq read the ids given, `same_ids`); the mmap threshold held through glibc's
  MALLOC_MMAP_THRESHOLD_; it writes nothing. Its estimate is `output_attentions`' with every layer's map
  kept three times at once (`INSEQ_COPIES`: the model's tuple, inseq's stack of it and its clone).

Each line holds the guard's estimate beside the peak (`estimate_over_peak`), the CPU and the date. A
way whose estimate is over half of the memory available is not run: its line holds the estimate.
One JSON line per (length, way), and a last line per length comparing `long` with `sdpa`.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

WAYS = ("sdpa", "long", "eager", "output_attentions", "inseq")
HERE = Path(__file__).resolve().parent
# inseq 0.7.1 holds every layer's map three times at once: `output.attentions`, `torch.stack(output.attentions, dim=1)`
# (models/huggingface_model.py) and its `.to("cpu").clone()` (attr/feat/internals_attribution.py)
INSEQ_COPIES = 3
CONFIG = {"hidden_size": 128, "num_hidden_layers": 4, "num_attention_heads": 4, "num_key_value_heads": 2, "intermediate_size": 256,
          "vocab_size": 512, "bos_token_id": 1, "eos_token_id": 2}  # fmt: skip


def _mib(size: float) -> float:
    return round(size / 2**20, 1)


def token_ids(n: int):
    """The n random token ids every way reads: (1, N), seed 0, above the special ids."""
    import torch

    return torch.randint(3, CONFIG["vocab_size"], (1, n), generator=torch.Generator().manual_seed(0))  # (1, N)


def weights_hash(model) -> str:
    """sha256 of a model's state dict (names in order, then each tensor's bytes): the same weights in two environments."""
    import hashlib

    digest = hashlib.sha256()
    for name, tensor in sorted(model.state_dict().items()):
        digest.update(name.encode())
        digest.update(tensor.detach().cpu().contiguous().numpy().tobytes())
    return digest.hexdigest()


def _model(n: int, implementation: str):
    import torch
    import transformers

    config = transformers.LlamaConfig(**CONFIG, max_position_embeddings=n)
    torch.manual_seed(0)
    return transformers.LlamaForCausalLM._from_config(config, attn_implementation=implementation).eval()


def _run(way: str, n: int, folder: Path) -> dict:
    """Do `way` at n tokens, the model built first and not timed; returns seconds, bytes written and (long road) its estimate."""
    import torch

    from attnkit.sources.hf.load import HfModel
    from attnkit.sources.hf.long.capture import IMPLEMENTATION, register
    from attnkit.sources.hf.long.export import write_ids
    from attnkit.sources.hf.long.options import LongOptions
    from attnkit.sources.npz import npz_writer

    ids = token_ids(n)  # (1, N)
    out = folder / "a.npz"
    register()
    model = _model(n, {"sdpa": "sdpa", "long": IMPLEMENTATION}.get(way, "eager"))
    start = time.perf_counter()
    if way == "long":
        hf = HfModel("tiny-llama", model, None, None, "decoder", n)
        with npz_writer(out) as writer:
            summary = write_ids(hf, ids, [str(i) for i in range(n)], writer, LongOptions(max_memory=2**50))
        return {"seconds": round(time.perf_counter() - start, 2), "disk_mib": _mib(out.stat().st_size), "spilled": summary["estimate"]["spilled_bytes"] > 0}
    extra = {}
    with torch.inference_mode():
        if way == "sdpa":
            model(input_ids=ids, logits_to_keep=1, use_cache=False)
        elif way == "output_attentions":
            maps = [a[0].float().numpy() for a in model(input_ids=ids, logits_to_keep=1, output_attentions=True).attentions]
            extra = {"held_mib": _mib(sum(m.nbytes for m in maps))}
        else:
            from attnkit.sources.collect import Collector
            from attnkit.sources.hf.collect import collecting
            from attnkit.sources.store import NpzStore

            with npz_writer(out) as writer:
                collector = Collector(NpzStore(writer))  # each layer into the npz as it comes, as `attnkit attention` keeps it
                with collecting(model, "decoder", collector):
                    model(input_ids=ids, logits_to_keep=1, use_cache=False)
                collector.finish()
            extra = {"disk_mib": _mib(out.stat().st_size)}
    return {"seconds": round(time.perf_counter() - start, 2), **extra}


def child(way: str, n: int) -> dict:
    import torch  # noqa: F401  (the imports are the baseline)
    import transformers  # noqa: F401

    from attnkit.sources.hf.long.budget import release_freed_memory

    release_freed_memory()
    with tempfile.TemporaryDirectory() as tmp:
        _run(way, 16, Path(tmp))  # the lazy imports and first calls of the way, in the baseline
        base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
        extra = _run(way, n, Path(tmp))
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    return {"tokens": n, "way": way, "measured": True, "peak_mib": _mib(peak - base), **extra}


def estimate(way: str, n: int) -> dict:
    """What the guard says a way takes at n tokens, without running it (bytes -> MiB)."""
    from attnkit.sources.hf.long.budget import Plan, eager_bytes, estimate, forward_bytes, shape_of

    shape = shape_of(_model(256, "sdpa"))  # rotary: no position table to grow with n
    maps = shape.layers * shape.heads * n * n * 4
    if way == "long":
        est = estimate(shape, n, Plan(shape.layers, 1, shape.heads))
        return {"memory_mib": _mib(est.memory), "disk_mib": _mib(est.disk)}
    if way == "sdpa":
        return {"memory_mib": _mib(forward_bytes(shape, n)), "disk_mib": 0.0}
    if way == "eager":
        return {"memory_mib": _mib(eager_bytes(shape, n)), "disk_mib": _mib(maps)}
    copies = INSEQ_COPIES if way == "inseq" else 1
    return {"memory_mib": _mib(eager_bytes(shape, n) + copies * maps), "disk_mib": 0.0}


def measure(way: str, n: int, cache: Path) -> dict:
    """Run `way` at n tokens in a fresh process (inseq's: in its own environment) and return its line."""
    if way != "inseq":
        done = subprocess.run([sys.executable, __file__, "--child", way, "--lengths", str(n)], check=True, stdout=subprocess.PIPE, text=True)
        return json.loads(done.stdout.strip().splitlines()[-1])
    from attnkit.sources.hf.long.budget import MMAP_THRESHOLD
    from vs_tools import inseq_env

    cmd = [str(inseq_env(cache)), str(HERE / "vs_tools_envs" / "inseq_long.py"), str(n)]
    env = {**os.environ, "MALLOC_MMAP_THRESHOLD_": str(MMAP_THRESHOLD)}  # as release_freed_memory holds it
    done = subprocess.run(cmd, check=True, stdout=subprocess.PIPE, text=True, env=env)
    line = json.loads(done.stdout.strip().splitlines()[-1])
    if line.pop("weights") != weights_hash(_model(256, "sdpa")) or not line["same_ids"]:
        raise SystemExit(f"inseq's run at {n} tokens did not read the model or the ids the other ways read: {line}")
    return line


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lengths", type=int, nargs="+", default=[2048, 8192, 32768])
    parser.add_argument("--ways", nargs="+", choices=WAYS, default=list(WAYS))
    parser.add_argument("--cache", type=Path, default=Path.home() / ".cache" / "attnkit-vs", help="where inseq's environment is (made on first use)")
    parser.add_argument("--out", type=Path, help="also append the lines to this .jsonl file")
    parser.add_argument("--child", choices=WAYS[:-1], help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.child, args.lengths[0])))
        return
    import torch

    from attnkit.precision import cpu_model
    from attnkit.sources.hf.long.budget import available_memory

    limit = available_memory() // 2
    where = {"cpu": cpu_model(), "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")}
    for n in args.lengths:
        lines = {}
        for way in args.ways:
            est = estimate(way, n)
            if est["memory_mib"] * 2**20 > limit:
                lines[way] = {"tokens": n, "way": way, "measured": False, "estimate": est, **where}
            else:
                line = measure(way, n, args.cache)
                ratio = round(est["memory_mib"] / line["peak_mib"], 2)
                lines[way] = {**line, "estimate": est, "estimate_over_peak": ratio, "threads": torch.get_num_threads(), **where}
        if "long" in lines and "sdpa" in lines and lines["long"]["measured"] and lines["sdpa"]["measured"]:
            lines["compare"] = {"tokens": n, "way": "long_over_sdpa", "extra_peak_mib": round(lines["long"]["peak_mib"] - lines["sdpa"]["peak_mib"], 1),
                                "time_ratio": round(lines["long"]["seconds"] / lines["sdpa"]["seconds"], 2), **where}  # fmt: skip
        for line in lines.values():
            print(json.dumps(line), flush=True)
            if args.out is not None:
                with args.out.open("a", encoding="utf-8") as f:
                    f.write(json.dumps(line) + "\n")


if __name__ == "__main__":
    main()
