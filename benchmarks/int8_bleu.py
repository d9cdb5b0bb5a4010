"""What int8 costs on this CPU: BLEU of int8 against fp32, per instruction set, on one trained run.

    .venv/bin/python benchmarks/int8_bleu.py RUN_DIR [--data ../shared/data/multi30k] [--threads 2]
        [--isas native native-onednn avx2 avx2-onednn] [--beams 1 5] [--limit N] [--work DIR] [--src FILE --ref FILE]

One run exports RUN_DIR to CTranslate2 three times (float32, int8, int8_float32; into --work,
default RUN_DIR/int8), then, for each instruction-set setting, decodes Multi30k test_2016_flickr in
a process of its own (the settings are read when the libraries load):

| setting | environment | what it imitates |
|---|---|---|
| `native` | nothing | this CPU as it is (on a CPU without VNNI, attnkit picks MKL for CTranslate2) |
| `native-onednn` | `CT2_USE_MKL=0` | this CPU as it is, on CTranslate2's own default for non-Intel CPUs (oneDNN) |
| `avx2` | `CT2_FORCE_CPU_ISA=AVX2 ONEDNN_MAX_CPU_ISA=AVX2 ATEN_CPU_CAPABILITY=avx2` | a CPU with AVX2 only (no AVX-512, no VNNI), as attnkit runs there (CTranslate2 on MKL) |
| `avx2-onednn` | `avx2` + `CT2_USE_MKL=0` | the same with CTranslate2's own default on non-Intel CPUs (oneDNN) |

The first line names the CPU as `attnkit doctor` does, with the date; for each setting and search it
prints one JSON line per engine, with the GEMM backend CTranslate2 ran on (`ct2_backend`, read from the
loaded module): sacreBLEU against the references,
the BLEU change from CTranslate2 float32 in the same setting, and `same_as_fp32`, the share of
sentences whose output equals CTranslate2 float32's. `attnkit-int8` is attnkit's own dynamic int8
(`translate --dtype int8`, PyTorch's fbgemm). The last line is a Markdown table for
docs/deployment.md. No timing: BLEU only, so it may share the machine.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

AVX2 = {"CT2_FORCE_CPU_ISA": "AVX2", "ONEDNN_MAX_CPU_ISA": "AVX2", "ATEN_CPU_CAPABILITY": "avx2"}
ISAS = {"native": {}, "native-onednn": {"CT2_USE_MKL": "0"}, "avx2": AVX2, "avx2-onednn": AVX2 | {"CT2_USE_MKL": "0"}}
QUANTIZATIONS = ["float32", "int8", "int8_float32"]


def _export(run: str, work: Path) -> None:
    from attnkit.cli import main as attnkit_main

    for quantization in QUANTIZATIONS:
        out = work / quantization
        if not (out / "export.json").is_file():
            extra = [] if quantization == "float32" else ["--quantization", quantization]
            assert attnkit_main(["export", run, "--format", "ctranslate2", "--out", str(out), *extra]) == 0


def one_setting(args: argparse.Namespace) -> None:
    """Decode the test set with every engine in this process's instruction-set setting; print JSON lines."""
    import sacrebleu
    import torch

    from attnkit.artifacts.runs import load_run
    from attnkit.data.text import read_parallel
    from attnkit.families import FAMILIES
    from attnkit.families.translation.export import ctranslate2_model
    from attnkit.families.translation.export.bundle import read_bundle
    from attnkit.families.translation.translate import translate

    torch.set_num_threads(args.threads)
    if args.src:
        pairs = read_parallel(Path(args.src), Path(args.ref))[: args.limit]
    else:
        pairs = read_parallel(Path(args.data) / "test_2016_flickr.en.gz", Path(args.data) / "test_2016_flickr.de.gz")[: args.limit]
    src, ref = [p[0] for p in pairs], [p[1] for p in pairs]
    work = Path(args.work)
    for beam in args.beams:
        outputs: dict[str, list[str]] = {}
        for quantization in QUANTIZATIONS:
            bundle = read_bundle(work / quantization, "ctranslate2")
            translator = ctranslate2_model.load(bundle, threads=args.threads)
            outputs[f"ctranslate2-{quantization}"] = ctranslate2_model.translate(bundle, translator, src, bundle.decode.with_overrides(beam=beam))
        loaded = load_run(args.run, FAMILIES["translation"], dtype=torch.qint8)
        decode = loaded.run.decode.with_overrides(beam=beam)
        outputs["attnkit-int8"] = [nbest[0].text for nbest in translate(loaded.model, loaded.vocabs, src, decode)]
        base = outputs["ctranslate2-float32"]
        base_bleu = sacrebleu.corpus_bleu(base, [ref]).score
        for engine, out in outputs.items():
            bleu = sacrebleu.corpus_bleu(out, [ref]).score
            same = sum(a == b for a, b in zip(out, base)) / len(base)
            row = {"setting": args.one, "ct2_backend": ctranslate2_model.loaded_backend(), "engine": engine, "beam": beam}
            row |= {"bleu": round(bleu, 2), "delta_bleu": round(bleu - base_bleu, 2)}
            print(json.dumps(row | {"same_as_fp32": round(same, 4), "sentences": len(src), "threads": args.threads}), flush=True)


def _table(rows: list[dict]) -> str:
    settings = list(dict.fromkeys(r["setting"] for r in rows))
    lines = ["| setting | search | " + " | ".join(f"{e}: BLEU (same as fp32)" for e in dict.fromkeys(r["engine"] for r in rows)) + " |"]
    lines.append("|---|---|" + "---|" * (len(lines[0].split("|")) - 4))
    for setting in settings:
        for beam in dict.fromkeys(r["beam"] for r in rows):
            cells = [f"{r['bleu']:.2f} ({r['same_as_fp32']:.1%})" for r in rows if r["setting"] == setting and r["beam"] == beam]
            lines.append(f"| {setting} | {'greedy' if beam == 1 else f'beam {beam}'} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run")
    parser.add_argument("--data", default="../shared/data/multi30k")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--isas", nargs="+", choices=list(ISAS), default=list(ISAS))
    parser.add_argument("--beams", nargs="+", type=int, default=[1, 5])
    parser.add_argument("--limit", type=int)
    parser.add_argument("--src", help="source sentences, one a line (instead of Multi30k's test_2016_flickr)")
    parser.add_argument("--ref", help="their references, one a line (with --src)")
    parser.add_argument("--work")
    parser.add_argument("--one", help=argparse.SUPPRESS)  # internal: run one setting in this process
    args = parser.parse_args()
    args.work = args.work or str(Path(args.run) / "int8")
    if args.one:
        one_setting(args)
        return
    _export(args.run, Path(args.work))
    rows = []
    from attnkit.commands.doctor import checks

    cpu = next(detail for what, _, detail, _ in checks() if what == "CPU")
    print(json.dumps({"doctor_cpu": cpu, "date": time.strftime("%Y-%m-%d"), "run": args.run, "threads": args.threads}))
    for isa in args.isas:
        command = [sys.executable, __file__, args.run, "--data", args.data, "--threads", str(args.threads), "--work", args.work, "--one", isa]
        command += ["--beams", *map(str, args.beams)] + (["--limit", str(args.limit)] if args.limit else [])
        command += ["--src", args.src, "--ref", args.ref] if args.src else []
        result = subprocess.run(command, env=os.environ | ISAS[isa], capture_output=True, text=True, check=False)
        if result.returncode:
            sys.exit(f"setting {isa} failed:\n{result.stderr[-3000:]}")
        for line in result.stdout.splitlines():
            print(line, flush=True)
            rows.append(json.loads(line))
    print(_table(rows))


if __name__ == "__main__":
    main()
