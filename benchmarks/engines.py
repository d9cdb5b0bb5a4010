"""Decoding engines side by side on one model: attnkit (fp32, bf16, int8), CTranslate2 (fp32, int8), ONNX Runtime.

    .venv/bin/python benchmarks/engines.py RUN_DIR [--data ../shared/data/multi30k] [--threads 2]
        [--repeats 3] [--beams 1 5] [--engines ...] [--limit N] [--work DIR] [--reference DIR] [--profile] [--ct2-one-batch]

One run of the script exports the run (CTranslate2 float32 and ONNX, into --work, default
RUN_DIR/engines), then decodes Multi30k test_2016_flickr with every engine and search: greedy
and beam 5 with the run's length penalty, batches of 64 sorted by length, the same tokenizer and
the same scoring (sacreBLEU). On N threads, attnkit and CTranslate2 both search N batches at once,
one thread each (attnkit's `translate` workers; CTranslate2's `inter_threads=N, intra_threads=1`,
every batch queued at once), which is each one's fastest use of the cores; `--ct2-one-batch` gives
CTranslate2 one batch at a time on all N threads instead (`intra_threads=N`, as this script did
before 2026-12-06: 1.28x slower greedy on 2 cores). ONNX Runtime runs one batch at a time on N
intra-op threads. Each engine runs in a process of its own, so that its peak memory
(`peak_rss_mb`, the process's peak resident set, VmHWM: Python, PyTorch, which every engine's
process imports, the model and decoding; `rss_start_mb` before and `rss_loaded_mb` after loading
the model) is its own. Model loading is excluded from the time;
`seconds` is the median of the repeats. Each (engine, search) prints one JSON line, with
`same_as_attnkit_fp32`, the fraction of sentences whose output equals attnkit fp32's; the last
line is a Markdown table for docs/decoding.md. `--profile` also writes, for attnkit's engines, the
PyTorch profiler's operator table of one more (untimed) decode: where attnkit is slower than
CTranslate2, it says on what. Run it alone on the machine: the figures are
ratios only when measured side by side, in one run.
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

from attnkit.allocator import MARKER, use_jemalloc
from attnkit.cli import main as attnkit_main
from attnkit.config.schema import Decode
from attnkit.data.text import read_parallel
from attnkit.families import load_run
from attnkit.families.translation.bleu import score_translations
from attnkit.families.translation.export import ctranslate2_model, onnx_runner
from attnkit.families.translation.export.bundle import read_bundle
from attnkit.families.translation.translate import translate

ENGINES = ["attnkit-fp32", "attnkit-bf16", "attnkit-int8", "ctranslate2-fp32", "ctranslate2-int8", "onnxruntime-fp32"]


def _memory_mb(field: str) -> float:
    """VmHWM (peak resident set) or VmRSS of this process, in MB (Linux; reset by exec, unlike ru_maxrss)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024  # kB
    raise RuntimeError(f"/proc/self/status has no {field}")


def _decoder(engine: str, run: str, work: Path, threads: int, ct2_one_batch: bool) -> Callable[[list[str], Decode], list[str]]:
    """A function lines -> outputs for `engine`, its model loaded."""
    name, precision = engine.rsplit("-", 1)
    if name == "attnkit":
        dtype = {"fp32": None, "bf16": torch.bfloat16, "int8": torch.qint8}[precision]
        loaded = load_run(run, dtype=dtype)
        return lambda lines, decode: [n[0].text for n in translate(loaded.model, loaded.vocabs, lines, decode)]
    if name == "ctranslate2":
        bundle = read_bundle(work / "ctranslate2", "ctranslate2")
        layout = {"threads": threads, "batches": 1} if ct2_one_batch else {"threads": 1, "batches": threads}
        translator = ctranslate2_model.load(bundle, compute_type={"fp32": "float32", "int8": "int8"}[precision], **layout)
        return lambda lines, decode: ctranslate2_model.translate(bundle, translator, lines, decode)
    bundle = read_bundle(work / "onnx", "onnx")
    model = onnx_runner.OnnxTransformer(bundle, threads=threads)
    return lambda lines, decode: onnx_runner.translate(bundle, model, lines, decode)


def one_engine(args: argparse.Namespace) -> None:
    """Child process: load one engine, decode with each search, print one JSON line per search."""
    use_jemalloc(sys.argv)  # as `attnkit translate` does (every engine gets the same allocator)
    torch.set_num_threads(args.threads)
    pairs = read_parallel(Path(args.data) / "test_2016_flickr.en.gz", Path(args.data) / "test_2016_flickr.de.gz")[: args.limit]
    src, ref = [s for s, _ in pairs], [r for _, r in pairs]
    alpha = read_bundle(Path(args.work) / "ctranslate2", "ctranslate2").decode.alpha  # the run's
    rss_start = _memory_mb("VmRSS")
    decode_fn = _decoder(args.one, args.run, Path(args.work), args.threads, args.ct2_one_batch)
    rss_loaded = _memory_mb("VmRSS")
    for beam in args.beams:
        decode = Decode(beam=beam, alpha=alpha, batch_size=64)
        times, out = [], []
        for _ in range(args.repeats):
            started = time.perf_counter()
            out = decode_fn(src, decode)
            times.append(time.perf_counter() - started)
        outputs = Path(args.work) / f"{args.one}_beam{beam}.txt"
        outputs.write_text("".join(line + "\n" for line in out), encoding="utf-8")
        bleu = score_translations(out, ref)
        seconds = statistics.median(times)
        print(json.dumps({
            "benchmark": "engines", "engine": args.one, "beam": beam, "alpha": alpha, "sentences": len(src), "seconds": round(seconds, 2),
            "sentences_per_s": round(len(src) / seconds, 1), "bleu": round(bleu["bleu"], 2), "chrf": round(bleu["chrf"], 2),
            "peak_rss_mb": round(_memory_mb("VmHWM")), "rss_loaded_mb": round(rss_loaded), "rss_start_mb": round(rss_start),
            "times": [round(t, 2) for t in times], "threads": args.threads, "ct2_one_batch": args.ct2_one_batch, "allocator": os.environ.get(MARKER, "system"), "outputs": str(outputs),
        }), flush=True)  # fmt: skip
    if args.profile and args.one.startswith("attnkit"):  # after the timed runs, so that the profiler's memory is not in peak_rss_mb
        for beam in args.beams:
            # One worker: the profiler records the operators of the thread that runs them, and the
            # CPU decoder's worker threads (translate.py) would leave the table empty.
            profiled = Decode(beam=beam, alpha=alpha, batch_size=64, workers=1)
            _profile(decode_fn, src, profiled, Path(args.work) / f"{args.one}_beam{beam}_profile.txt")


def _profile(decode_fn: Callable[[list[str], Decode], list[str]], src: list[str], decode: Decode, path: Path) -> None:
    """One more decode under the PyTorch profiler: the operators by self CPU time, to `path`."""
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU]) as prof:
        decode_fn(src, decode)
    path.write_text(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=30) + "\n", encoding="utf-8")


def _export(run: str, work: Path) -> None:
    for fmt in ("ctranslate2", "onnx"):
        if not (work / fmt / "attnkit-export.json").is_file():
            if attnkit_main(["export", run, "--format", fmt, "--out", str(work / fmt)]) != 0:
                sys.exit(f"engines.py: exporting {run} to {fmt} failed")


def _same(outputs: list[str], reference: list[str]) -> float:
    """The fraction of `reference`'s lines that `outputs` repeats exactly, line by line."""
    return round(sum(a == b for a, b in zip(outputs, reference)) / len(reference), 4)


def _table(rows: list[dict]) -> str:
    earlier = any("same_as_reference" in r for r in rows)
    lines = [
        "| engine | search | sentences/s | BLEU | same output as attnkit fp32 |" + (" same as the reference run |" if earlier else "") + " peak RSS (MB) |"
    ]
    lines.append("|---|---|---|---|---|" + ("---|" if earlier else "") + "---|")
    for r in rows:
        search = "greedy" if r["beam"] == 1 else f"beam {r['beam']}"
        same = f" {r['same_as_reference']:.1%} |" if "same_as_reference" in r else (" |" if earlier else "")
        lines.append(f"| {r['engine']} | {search} | {r['sentences_per_s']} | {r['bleu']} | {r['same_as_attnkit_fp32']:.1%} |{same} {r['peak_rss_mb']} |")
    return "\n".join(lines)


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("run")
    p.add_argument("--data", default="../shared/data/multi30k")
    p.add_argument("--work", help="export folder and outputs (default: RUN/engines)")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--beams", type=int, nargs="+", default=[1, 5])
    p.add_argument("--engines", nargs="+", choices=ENGINES, default=ENGINES)
    p.add_argument("--limit", type=int, default=None, help="only the first N test sentences")
    p.add_argument("--profile", action="store_true", help="attnkit engines: also write WORK/ENGINE_beamK_profile.txt (one more decode, profiled)")
    p.add_argument(
        "--reference",
        help="WORK folder of an earlier run of this script (say, on the code before a change): "
        "each row also gets same_as_reference, the fraction of outputs equal to that run's outputs of the same engine",
    )
    p.add_argument("--ct2-one-batch", action="store_true", help="CTranslate2 searches one batch at a time on all threads (default: a batch per thread)")
    p.add_argument("--one", choices=ENGINES, help=argparse.SUPPRESS)  # child process: one engine
    args = p.parse_args()
    args.work = args.work or str(Path(args.run) / "engines")
    if args.one:
        return one_engine(args)
    _export(args.run, Path(args.work))
    engines = ["attnkit-fp32"] + [e for e in args.engines if e != "attnkit-fp32"]  # the reference decodes first
    child = [sys.executable, __file__, args.run, "--data", args.data, "--work", args.work, "--threads", str(args.threads), "--repeats", str(args.repeats)]
    child += ["--beams", *map(str, args.beams)] + (["--limit", str(args.limit)] if args.limit else []) + (["--profile"] if args.profile else [])
    child += ["--ct2-one-batch"] if args.ct2_one_batch else []
    rows = []
    for engine in engines:
        done = subprocess.run([*child, "--one", engine], capture_output=True, text=True)
        if done.returncode != 0:
            sys.exit(f"engines.py: {engine} failed:\n{done.stderr[-2000:]}")
        for line in done.stdout.splitlines():
            row = json.loads(line)
            reference = Path(args.work, f"attnkit-fp32_beam{row['beam']}.txt").read_text(encoding="utf-8").splitlines()
            mine = Path(row["outputs"]).read_text(encoding="utf-8").splitlines()
            row["same_as_attnkit_fp32"] = _same(mine, reference)
            earlier = Path(args.reference or "", f"{engine}_beam{row['beam']}.txt")
            if args.reference and earlier.is_file():
                row["same_as_reference"] = _same(mine, earlier.read_text(encoding="utf-8").splitlines())
            rows.append(row)
            print(json.dumps(row), flush=True)
    print(_table(rows))


if __name__ == "__main__":
    main()
