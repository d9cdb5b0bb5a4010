"""The translation family's CLI: `attnkit translate`, and its options of `attnkit evaluate`."""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Callable
from pathlib import Path

from attnkit.artifacts.runs import LoadedRun, load_run
from attnkit.config.args import add_checkpoint, add_dtype, add_text, example, non_negative_float, positive_int, read_texts
from attnkit.errors import AttnkitError
from attnkit.families.protocol import ATTNKIT, WritePage, add_once, check_engine, engine_names, load_engine_run
from attnkit.families.translation.evaluate import evaluate_run
from attnkit.families.translation.export import ctranslate2_model, onnx_graphs
from attnkit.families.translation.export.bundle import require_engine, write_bundle
from attnkit.families.translation.hf import export as hf_export
from attnkit.families.translation.hf.importer import import_marian
from attnkit.families.translation.translate import translate_run
from attnkit.io import atomic_write_text
from attnkit.models.head_mask import masked
from attnkit.progress import counter
from attnkit.viz.export import attention_record, write_attention_jsonl


def add_decode_arguments(parser: argparse.ArgumentParser) -> None:
    """--beam, --alpha (shared by translate, evaluate, plot and report)."""
    add_once(parser, "--beam", type=positive_int, help="beam size (1 = greedy; default: the run's decode.beam)")
    add_once(parser, "--alpha", type=non_negative_float, help="length penalty alpha (default: the run's decode.alpha)")


def add_commands(sub: argparse._SubParsersAction, family: object, write_page: WritePage) -> None:
    p = sub.add_parser(
        "translate",
        help="translate text with a trained run (or a Hugging Face MarianMT model after `attnkit import hf`)",
        description="Translate sentences (TEXT, --input or stdin, one a line) to stdout or --out.",
        epilog=example('attnkit translate runs/m30k "A dog runs in the park."'),
    )
    p.add_argument("run", help="run folder written by `attnkit train`, `attnkit average` or `attnkit import hf`")
    add_text(p)
    p.add_argument("--out", metavar="FILE", help="the translations' file (default: stdout)")
    add_decode_arguments(p)
    p.add_argument("--nbest", type=positive_int, default=1, help="print N hypotheses per line as `index<TAB>score<TAB>text`")
    p.add_argument("--attention", metavar="FILE.jsonl", help="also write source/target pieces and cross-attention per sentence")
    p.add_argument("--mask-heads", metavar="SPEC", help="decode with these heads masked: kind:layer.head, 1-based, e.g. encoder:1.2,cross:3.1")
    add_checkpoint(p)
    p.add_argument("--batch-size", type=positive_int, default=64, help="sentences per batch")
    add_dtype(p)
    p.add_argument("--workers", type=positive_int, help="CPU: batches decoded at once, one thread each (default: the number of threads)")
    p.add_argument("--engine", choices=engine_names([family]), default=ATTNKIT,
                   help="what searches: attnkit (default), or ctranslate2 (the run exported once to RUN/engines/; attention from attnkit's model)")  # fmt: skip
    p.set_defaults(func=cmd_translate, family=family, group="use")
    p = sub.add_parser("export", help="export a trained run to CTranslate2, ONNX or Hugging Face (Marian)",
                       description="Write a run's model for another engine (docs/deployment.md).",
                       epilog=example("attnkit export runs/m30k --format ctranslate2 --out runs/m30k-ct2"))  # fmt: skip
    p.add_argument("run", help="run folder written by `attnkit train` or `attnkit average`")
    p.add_argument("--format", choices=["ctranslate2", "onnx", "hf"], required=True, help="the engine to export for (hf: a MarianMTModel folder)")
    p.add_argument("--out", required=True, help="the export folder to write (replaced if it holds an earlier export)")
    p.add_argument("--quantization", choices=list(ctranslate2_model.QUANTIZATIONS), help="ctranslate2: store the weights as int8 or bf16")
    add_checkpoint(p)
    p.set_defaults(func=cmd_export, family=family, group="deploy")
    p = sub.add_parser("import", help="import a Hugging Face MarianMT model (OPUS-MT) as a run folder",
                       description="Make an attnkit run folder of a MarianMT model: a local folder, or a Hub id when online (docs/deployment.md).",
                       epilog=example("attnkit import hf Helsinki-NLP/opus-mt-en-de --out runs/opus-en-de"))  # fmt: skip
    p.add_argument("format", choices=["hf"], help="hf: a MarianMT model (config.json, model.safetensors, source.spm, target.spm, vocab.json)")
    p.add_argument("source", help="a local folder, or a Hub id such as Helsinki-NLP/opus-mt-en-de")
    p.add_argument("--out", required=True, help="the run folder to write (must not exist)")
    p.set_defaults(func=cmd_import, family=family, group="deploy")


def cmd_translate(args: argparse.Namespace) -> int:
    for path in (args.out, args.attention):  # fail before decoding, not after
        if path and Path(path).is_dir():
            raise AttnkitError(f"{path}: is a directory, expected a file path")
    if args.engine != ATTNKIT:
        check_engine(args.engine, [args.family], "attnkit translate")
        for option in ("mask_heads", "workers"):
            if getattr(args, option) is not None:
                raise AttnkitError(f"--{option.replace('_', '-')}: for attnkit's own search, not --engine {args.engine}")
    loaded = load_engine_run(args.run, args.family, args.checkpoint, args.dtype, args.engine)
    decode = loaded.run.decode.with_overrides(beam=args.beam, alpha=args.alpha, nbest=args.nbest, batch_size=args.batch_size, workers=args.workers)
    lines, source = read_texts(args)
    with counter(len(lines), "translating", unit="sent") as bar:
        results = translate_run(loaded, lines, decode, model=masked(loaded.model, args.mask_heads), return_attention=args.attention is not None,
                                progress=bar.update, source=source)  # fmt: skip
    if args.nbest > 1:
        out = [f"{i}\t{h.score:.4f}\t{h.text}" for i, nbest in enumerate(results) for h in nbest]
    else:
        out = [nbest[0].text for nbest in results]
    text = "".join(line + "\n" for line in out)
    if args.out:
        atomic_write_text(args.out, text)
    else:
        sys.stdout.write(text)
    if args.attention:
        best = [nbest[0] for nbest in results]
        write_attention_jsonl(args.attention, (attention_record(i, h.src_pieces, h.tgt_pieces, h.attention, h.score) for i, h in enumerate(best)))
    unfinished = sum(not nbest[0].finished for nbest in results)
    if unfinished:
        logging.getLogger("attnkit").warning("%d sentence(s) reached the maximum length without ending", unfinished)
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    if args.quantization and args.format != "ctranslate2":
        raise AttnkitError(f"--quantization {args.quantization}: only for --format ctranslate2 (ONNX and hf exports are float32)")
    require_engine(args.format)  # a missing engine is one line before the run loads
    loaded = load_run(args.run, args.family, args.checkpoint, pack=False)  # plain modules: the writers read and trace them
    if args.format == "ctranslate2":
        ctranslate2_model.warn_int8(args.quantization)
        writer = ctranslate2_model.write(loaded.model, loaded.vocabs, loaded.run.decode, args.quantization)
    elif args.format == "hf":
        writer = hf_export.write(loaded)
    else:
        writer = onnx_graphs.write(loaded.model)
    out = write_bundle(args.out, args.format, loaded, writer)
    logging.getLogger("attnkit").info("wrote the %s export of %s (%s) to %s", args.format, args.run, loaded.checkpoint.name, out)
    return 0


def cmd_import(args: argparse.Namespace) -> int:
    out = import_marian(args.source, args.out)
    print(f"imported {args.source}: translate with `attnkit translate {out}`, fine-tune with `attnkit train CONFIG --init {out}`")
    return 0


def add_evaluate_arguments(parser: argparse.ArgumentParser) -> list[str]:
    """`attnkit evaluate` options of translation runs; returns their names."""
    add_once(parser, "--src", help="source file (translation)")
    add_once(parser, "--ref", help="reference file (translation)")
    add_decode_arguments(parser)
    add_once(parser, "--workers", type=positive_int, help="CPU: batches decoded at once, one thread each (default: the number of threads)")
    return ["src", "ref", "beam", "alpha", "workers"]


def evaluate(args: argparse.Namespace, load: Callable[[], LoadedRun]) -> dict:
    """Check the options, then load the run (`load()`) and score it."""
    if not (args.src and args.ref):
        raise AttnkitError(f"{args.run}: a translation run: evaluate it with --src FILE --ref FILE")
    loaded = load()
    decode = loaded.run.decode.with_overrides(beam=args.beam, alpha=args.alpha, nbest=1, batch_size=args.batch_size, workers=args.workers)
    return evaluate_run(loaded, args.src, args.ref, decode)
