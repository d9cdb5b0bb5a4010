"""A run's beam search timed on two checkouts of attnkit: before and after a change, same run, same inputs.

    .venv/bin/python benchmarks/search_speed.py RUN --before OLD_CHECKOUT [--after NEW_CHECKOUT] [--n N] [--threads 2]
        [--repeats 3] [--rounds 1] [--data ../shared/data] [--checkpoint best] [--dtype fp32|bf16] [--beam K] [--compile [--compile-backend eager]]

Each side decodes in processes of its own, the "before" one with PYTHONPATH=OLD_CHECKOUT/src, the
"after" one with this checkout's src (or `--after`'s). What is decoded depends on the run's
family, with the beam its papers use (`--beam K` sets another; 1 is greedy search):

- translation: beam 5 on Multi30k val (DATA/multi30k/val.SRC.gz), `translate` in batches of 64;
- parsing: beam 21 on the dev trees' sentences (DATA/ptb_sample/treebank.zip, split as the run's
  `data.split`), `parse` with the gold tags, as `attnkit evaluate` does;
- captioning: beam 3 on Flickr8k dev images (DATA/flickr8k/images_dev.zip), the family's `search`
  in batches of 16; images are read and encoded by the CNN before the clock starts.

The run's length penalty and step limits are kept. Model loading is excluded; `seconds` is the
median of the repeats. With `--rounds R`, each side runs in R processes, before and after taking
turns (each first in every other round), and `seconds` is the median over all of them: on a
machine whose speed drifts by 10% within minutes, that is what makes a 3% change visible. It
prints one JSON line: both sides' seconds and sentences/s, `speedup` (before / after seconds)
and `identical`, whether every output is the same (`same_outputs`: the share of inputs whose
output is). Run it alone on the machine.

`--compile` times the "after" side with the model's decoding step compiled (`torch.compile(model.step,
dynamic=True)`, inductor with freezing): its first decode, which compiles, is timed on its own
(`first_seconds`) and left out of the median. With `--before` this same checkout, it measures
what compiling the step buys over the eager, packed step. `--compile-backend eager` traces the step
with TorchDynamo but runs it eagerly (no code generation, seconds instead of a minute): a check that the
compiled path is wired (tests/test_search_speed.py), not a timing.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import torch

from attnkit.allocator import use_jemalloc
from attnkit.families import load_run, run_family

HERE = Path(__file__).resolve().parents[1]
BEAMS = {"translation": 5, "parsing": 21, "captioning": 3}


def _translation(loaded, data: Path, n: int | None, beam: int) -> tuple[int, Callable[[], list[str]]]:
    from attnkit.data.text import read_lines
    from attnkit.families.translation.translate import translate

    lines = read_lines(data / "multi30k" / f"val.{loaded.run.data.src_lang}.gz")[:n]
    decode = loaded.run.decode.with_overrides(beam=beam, nbest=1, batch_size=64)
    return len(lines), lambda: [nbest[0].text for nbest in translate(loaded.model, loaded.vocabs, lines, decode)]


def _parsing(loaded, data: Path, n: int | None, beam: int) -> tuple[int, Callable[[], list[str]]]:
    from attnkit.families.parsing.chart.infer import parse
    from attnkit.families.parsing.commands import gold_trees

    if loaded.run.model.kind == "chart":
        sys.exit("search_speed.py: a chart parser decodes by CKY, without a beam search")
    gold = gold_trees(str(data / "ptb_sample" / "treebank.zip"), "dev", loaded.run)[:n]
    decode = loaded.run.decode.with_overrides(beam=beam, nbest=1, batch_size=64)
    words, tags = [t.words() for t in gold], [t.tags() for t in gold]
    return len(gold), lambda: [str(r.tree) for r in parse(loaded.model, loaded.vocabs, words, decode, tags=tags)]


def _captioning(loaded, data: Path, n: int | None, beam: int) -> tuple[int, Callable[[], list[str]]]:
    from attnkit.families.captioning.codec import detokenize
    from attnkit.families.captioning.images import ImageSource
    from attnkit.families.captioning.infer import search

    names = (data / "flickr8k" / "images_dev.txt").read_text(encoding="utf-8").split()[:n]
    source, model = ImageSource(data / "flickr8k" / "images_dev.zip"), loaded.model
    dtype = next(model.parameters()).dtype
    with torch.inference_mode():
        cells = [model.image_grid(source.load(names[i : i + 16], size=loaded.run.model.input_size).to(dtype)) for i in range(0, len(names), 16)]
    decode = loaded.run.decode.with_overrides(beam=beam, nbest=1)

    def run() -> list[str]:
        with torch.inference_mode():
            return [detokenize(loaded.vocabs.vocab, hyps[0].tokens) for batch in cells for hyps in search(model, batch, decode, loaded.run.data.max_len)]

    return len(names), run


def one_side(args: argparse.Namespace) -> None:
    """Child process: load the run with the attnkit on PYTHONPATH, decode `repeats` times, print one JSON line."""
    use_jemalloc(sys.argv)  # as `attnkit translate` does (both sides get the same allocator)
    torch.set_num_threads(args.threads)
    family = run_family(args.run).name
    loaded = load_run(args.run, args.checkpoint, dtype={"fp32": None, "bf16": torch.bfloat16}[args.dtype])
    count, decode = {"translation": _translation, "parsing": _parsing, "captioning": _captioning}[family](
        loaded, Path(args.data), args.n, args.beam or BEAMS[family]
    )
    first = None
    if args.compile:  # compile the step, then time the first decode (compilation) apart from the repeats
        torch._inductor.config.freezing = True  # weights as constants: folded and packed for the CPU GEMMs
        loaded.model.step = torch.compile(loaded.model.step, dynamic=True, backend=args.compile_backend)
        started = time.perf_counter()
        decode()
        first = time.perf_counter() - started
    times, outputs = [], []
    for _ in range(args.repeats):
        started = time.perf_counter()
        outputs = decode()
        times.append(time.perf_counter() - started)
    print(json.dumps({"family": family, "sentences": count, "times": times, "outputs": outputs, "first_seconds": first}))


def _side(args: argparse.Namespace, checkout: Path, compile_step: bool = False) -> dict:
    """Run `one_side` with `checkout`'s attnkit (the step compiled if `compile_step`); its JSON record."""
    compiled = ("--compile", "--compile-backend", args.compile_backend) if compile_step else ()
    command = [sys.executable, __file__, args.run, *compiled, "--child", "--n", str(args.n or 0), "--threads", str(args.threads),
               "--repeats", str(args.repeats), "--data", args.data, "--checkpoint", args.checkpoint, "--dtype", args.dtype, "--beam", str(args.beam or 0)]  # fmt: skip
    env = {**os.environ, "PYTHONPATH": str(checkout / "src")}
    done = subprocess.run(command, capture_output=True, text=True, env=env)
    if done.returncode != 0:
        sys.exit(f"search_speed.py: decoding with {checkout} failed:\n{done.stderr[-2000:]}")
    return json.loads(done.stdout.splitlines()[-1])


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("run")
    p.add_argument("--before", help="the checkout to compare with (its src/ is put on PYTHONPATH)")
    p.add_argument("--n", type=int, default=None, help="only the first N inputs")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--after", help="the checkout timed as after (default: this one)")
    p.add_argument("--repeats", type=int, default=3, help="decodes per process")
    p.add_argument("--rounds", type=int, default=1, help="processes per side, before and after alternating")
    p.add_argument("--data", default=str(HERE.parent / "shared" / "data"), help="the shared data folder")
    p.add_argument("--checkpoint", default="best")
    p.add_argument("--dtype", choices=["fp32", "bf16"], default="fp32")
    p.add_argument("--beam", type=int, default=None, help="the beam (default: the family's; 1: greedy search)")
    p.add_argument("--compile", action="store_true", help="compile the after side's decoding step (torch.compile, inductor with freezing)")
    p.add_argument("--compile-backend", choices=["inductor", "eager"], default="inductor", help="eager: traced but not code-generated (a check, not a timing)")
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)  # one side, in its own process
    args = p.parse_args()
    args.n, args.beam = args.n or None, args.beam or None
    if args.child:
        return one_side(args)
    if not args.before or not (Path(args.before) / "src" / "attnkit").is_dir():
        sys.exit(f"search_speed.py: --before {args.before}: not a checkout of attnkit (no src/attnkit in it)")
    checkouts = {"before": Path(args.before).resolve(), "after": Path(args.after).resolve() if args.after else HERE}
    runs: dict[str, list[dict]] = {"before": [], "after": []}
    for r in range(args.rounds):  # interleaved, each side first in every other round: drifts of the machine hit both
        for name in ("before", "after") if r % 2 == 0 else ("after", "before"):
            runs[name].append(_side(args, checkouts[name], compile_step=args.compile and name == "after"))
    before, after = ({**sides[-1], "times": [t for side in sides for t in side["times"]]} for sides in (runs["before"], runs["after"]))
    same = sum(a == b for a, b in zip(before["outputs"], after["outputs"]))
    record = {"benchmark": "search_speed", "run": args.run, "family": after["family"], "beam": args.beam or BEAMS[after["family"]], "dtype": args.dtype,
              "sentences": after["sentences"], "threads": args.threads, "repeats": args.repeats, "rounds": args.rounds, "compile": args.compile}  # fmt: skip
    if args.compile:
        record["compile_backend"] = args.compile_backend
    for name, side in (("before", before), ("after", after)):
        checkout = checkouts[name]
        seconds = statistics.median(side["times"])
        record[name] = {"checkout": str(checkout), "seconds": round(seconds, 3), "sentences_per_s": round(side["sentences"] / seconds, 2),
                        "times": [round(t, 3) for t in side["times"]]}  # fmt: skip
        if side["first_seconds"] is not None:  # the compiled side's first decode, compilation included
            record[name]["first_seconds"] = [round(s["first_seconds"], 3) for s in runs[name]]
    record["speedup"] = round(record["before"]["seconds"] / record["after"]["seconds"], 3)
    record["identical"] = same == after["sentences"] == before["sentences"]
    record["same_outputs"] = round(same / max(after["sentences"], 1), 4)
    print(json.dumps(record))


if __name__ == "__main__":
    main()
