"""Peak memory of collecting every attention map of a 2,048-token input: layer by layer vs output_attentions.

    .venv/bin/python benchmarks/attention_memory.py [--tokens 2048] [--layers 12]

A random-weight BERT-base-sized encoder (hidden 768, 12 heads, FFN 3072, max_position_embeddings
2048; float32, eager attention) reads one input of --tokens random ids, in a fresh process per way:

- `forward`: the plain forward pass, attention not kept (the floor);
- `layers`: attnkit's way (`attnkit.sources.hf.collect.collecting` + `sources.collect.Collector`):
  each layer's (12, T, T) weights written into an npz (on disk, in a temporary folder) and folded
  into the rollout as the layer runs, then dropped;
- `output_attentions`: transformers' `output_attentions=True`, which returns every layer at once
  (12 x 12 x T^2 float32: 2.4 GB at T = 2,048), then each converted to numpy, as a caller would.

Each child reports its peak resident set size (getrusage ru_maxrss) and its size after building the
model; prints one JSON line with the three, in MiB, and the theory (bytes of all layers' maps).
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
from pathlib import Path

WAYS = ("forward", "layers", "output_attentions")


def _mib(kib: int) -> float:
    return round(kib / 1024, 1)


def child(way: str, tokens: int, layers: int) -> dict:
    import torch
    import transformers

    from attnkit.sources.collect import Collector
    from attnkit.sources.hf.collect import collecting
    from attnkit.sources.npz import npz_writer

    config = transformers.BertConfig(hidden_size=768, num_hidden_layers=layers, num_attention_heads=12, intermediate_size=3072,
                                     max_position_embeddings=tokens)  # fmt: skip
    torch.manual_seed(0)
    model = transformers.BertModel._from_config(config, attn_implementation="eager").eval()
    ids = torch.randint(1000, config.vocab_size, (1, tokens))  # (1, T)
    built = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    with torch.inference_mode(), tempfile.TemporaryDirectory() as tmp:
        if way == "forward":
            model(ids)
        elif way == "layers":
            with npz_writer(Path(tmp) / "a.npz") as writer:
                collector = Collector(writer)
                with collecting(model, "encoder", collector):
                    model(ids)
                collector.finish()
            written = (Path(tmp) / "a.npz").stat().st_size
        else:
            maps = [a[0].float().numpy() for a in model(ids, output_attentions=True).attentions]  # (H, T, T) each
            written = sum(m.nbytes for m in maps)
    out = {"way": way, "built_mib": _mib(built), "peak_mib": _mib(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)}
    return out if way == "forward" else {**out, "attention_mib": round(written / 2**20, 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", type=int, default=2048)
    parser.add_argument("--layers", type=int, default=12)
    parser.add_argument("--child", choices=WAYS, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.child, args.tokens, args.layers)))
        return
    import torch

    results = {}
    for way in WAYS:
        cmd = [sys.executable, __file__, "--child", way, "--tokens", str(args.tokens), "--layers", str(args.layers)]
        results[way] = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout.strip().splitlines()[-1])
    theory = args.layers * 12 * args.tokens**2 * 4 / 2**20
    print(json.dumps({"tokens": args.tokens, "layers": args.layers, "heads": 12, "threads": torch.get_num_threads(),
                      "all_maps_mib": round(theory, 1), "ways": results}))  # fmt: skip


if __name__ == "__main__":
    main()
