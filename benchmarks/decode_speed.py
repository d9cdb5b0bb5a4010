"""Decoding speed on Multi30k test_2016_flickr (1,000 sentences, batches of 64): sentences/s and BLEU.

    .venv/bin/python benchmarks/decode_speed.py RUN_DIR [--data DIR] [--repeats 3] [--beams 1 5]
        [--dtype fp32|bf16] [--allocator jemalloc|system] [--workers N] [--limit N]

Model loading is excluded; each setting prints one JSON line with the median of the repeats.
The allocator is jemalloc by default, as for `attnkit translate` (allocator.py). Run it alone on
the machine.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

import torch

from attnkit.allocator import MARKER, use_jemalloc
from attnkit.config.schema import Decode
from attnkit.data.text import read_parallel
from attnkit.families import load_run
from attnkit.families.translation.bleu import score_translations
from attnkit.families.translation.translate import translate


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("run")
    p.add_argument("--data", default="../shared/data/multi30k")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--beams", type=int, nargs="+", default=[1, 5])
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--checkpoint", default="best")
    p.add_argument("--dtype", choices=["fp32", "bf16"], default="fp32")
    p.add_argument("--allocator", choices=["jemalloc", "system"], default="jemalloc")
    p.add_argument("--workers", type=int, default=None, help="batches decoded at once (default: one per thread)")
    p.add_argument("--limit", type=int, default=None, help="only the first N test sentences")
    args = p.parse_args()
    if args.allocator == "jemalloc":
        use_jemalloc(sys.argv)
    torch.set_num_threads(args.threads)
    pairs = read_parallel(Path(args.data) / "test_2016_flickr.en.gz", Path(args.data) / "test_2016_flickr.de.gz")
    src, ref = [s for s, _ in pairs][: args.limit], [r for _, r in pairs][: args.limit]
    loaded = load_run(args.run, args.checkpoint, dtype={"fp32": None, "bf16": torch.bfloat16}[args.dtype])
    for beam in args.beams:
        settings = Decode(beam=beam, alpha=loaded.run.decode.alpha, batch_size=64, workers=args.workers)
        times = []
        for _ in range(args.repeats):
            started = time.perf_counter()
            out = translate(loaded.model, loaded.vocabs, src, settings)
            times.append(time.perf_counter() - started)
        seconds = statistics.median(times)
        bleu = score_translations([o[0].text for o in out], ref)
        print(json.dumps({
            "benchmark": "decode_speed", "run": args.run, "checkpoint": str(loaded.checkpoint), "beam": beam,
            "alpha": settings.alpha, "sentences": len(src), "seconds": round(seconds, 2),
            "sentences_per_s": round(len(src) / seconds, 1), "bleu": round(bleu["bleu"], 2),
            "chrf": round(bleu["chrf"], 2), "dtype": args.dtype, "times": [round(t, 2) for t in times], "threads": args.threads,
            "workers": args.workers or args.threads,
            "allocator": os.environ.get(MARKER, "system"),
        }))  # fmt: skip


if __name__ == "__main__":
    main()
