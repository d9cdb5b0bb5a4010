"""The `attnkit` command: argparse subcommands, each loading its inputs and calling one library function.

This is the only module that catches `AttnkitError` (printed as one line, exit status 2) and the
only place with progress bars.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from pathlib import Path
from typing import Sequence

from attnkit import __version__
from attnkit.errors import AttnkitError, DataError

PRESETS = Path(__file__).parent / "presets"


def _config_path(name: str) -> Path:
    """A config file path, or the name of a built-in preset (e.g. `m30k-small`)."""
    path = Path(name)
    if path.exists() or path.suffix:
        return path
    preset = PRESETS / f"{name}.yaml"
    return preset if preset.is_file() else path


def torch_dtype(name: str):
    """`fp32` or `bf16` (decoding with bfloat16 weights) as a torch dtype."""
    import torch

    return {"fp32": None, "bf16": torch.bfloat16}[name]


def cmd_config(args: argparse.Namespace) -> int:
    from attnkit.config import dump_config, load_config

    sys.stdout.write(dump_config(load_config(_config_path(args.config), args.set)))
    return 0


def cmd_train(args: argparse.Namespace) -> int:
    from attnkit.config import load_config
    from attnkit.train.loop import train
    from attnkit.progress import TrainProgress

    run = load_config(_config_path(args.config), args.set)
    with TrainProgress(run.train) as progress:
        state = train(run, args.out, resume=args.resume, data_dir=args.data, on_event=progress.event)
    best = f", best {run.train.early_stopping} {abs(state.best):.2f}" if state.best is not None else ""
    if state.interrupted:
        sets = "".join(f" --set {s}" for s in args.set)
        print(f"stopped by {state.interrupted} at step {state.step}; checkpoint saved in {args.out}. "
              f"Resume with: attnkit train {args.config} --out {args.out}{sets} --resume")  # fmt: skip
        return 0
    print(f"trained {state.step} steps in {state.elapsed / 60:.1f} min{best}; run folder: {args.out}")
    return 0


def _read_input(path: str | None) -> list[str]:
    from attnkit.data.text import read_lines

    if path is None:
        try:
            return [line.rstrip("\r\n").strip() for line in sys.stdin.buffer.read().decode("utf-8").splitlines()]
        except UnicodeDecodeError as e:
            raise DataError(f"<stdin>: invalid UTF-8 at byte {e.start}") from None
    return read_lines(path)


def cmd_translate(args: argparse.Namespace) -> int:
    from attnkit.decode.translate import SearchSettings, translate
    from attnkit.io import atomic_write_text
    from attnkit.progress import counter
    from attnkit.runs import load_run
    from attnkit.viz.export import attention_record, write_attention_jsonl

    for path in (args.output, args.attention):  # fail before decoding, not after
        if path and Path(path).is_dir():
            raise AttnkitError(f"{path}: is a directory, expected a file path")
    loaded = load_run(args.run, args.checkpoint, dtype=torch_dtype(args.dtype))
    d = loaded.run.decode
    settings = SearchSettings(beam=args.beam or d.beam, alpha=d.alpha if args.alpha is None else args.alpha,
                              nbest=args.nbest, max_len_a=d.max_len_a, max_len_b=d.max_len_b, batch_size=args.batch_size)  # fmt: skip
    if settings.nbest > settings.beam:
        raise AttnkitError(f"--nbest {settings.nbest} must be <= --beam {settings.beam}")
    lines = _read_input(args.input)
    with counter(len(lines), "translating", unit="sent") as bar:
        results = translate(loaded.model, loaded.vocabs, lines, settings, return_attention=args.attention is not None, progress=bar.update)
    if args.nbest > 1:
        out = [f"{i}\t{h.score:.4f}\t{h.text}" for i, nbest in enumerate(results) for h in nbest]
    else:
        out = [nbest[0].text for nbest in results]
    text = "".join(line + "\n" for line in out)
    if args.output:
        atomic_write_text(args.output, text)
    else:
        sys.stdout.write(text)
    if args.attention:
        best = [nbest[0] for nbest in results]
        write_attention_jsonl(args.attention, (attention_record(i, h.src_pieces, h.tgt_pieces, h.attention, h.score) for i, h in enumerate(best)))
    unfinished = sum(not nbest[0].finished for nbest in results)
    if unfinished:
        logging.getLogger("attnkit").warning("%d sentence(s) reached the maximum length without ending", unfinished)
    return 0


def cmd_evaluate(args: argparse.Namespace) -> int:
    from attnkit.evaluate.run_eval import evaluate_run

    report = evaluate_run(args.run, args.src, args.ref, beam=args.beam, alpha=args.alpha, checkpoint=args.checkpoint,
                          batch_size=args.batch_size, dtype=torch_dtype(args.dtype))  # fmt: skip
    print(json.dumps(report, indent=1))
    return 0


def cmd_average(args: argparse.Namespace) -> int:
    from attnkit.train.average import average_run

    out = average_run(args.run, args.last, args.out)
    print(f"averaged the last {args.last} checkpoints of {args.run} into {out}")
    return 0


def cmd_data_check(args: argparse.Namespace) -> int:
    from attnkit.data.check import check_parallel

    policy = None
    if args.config:
        from attnkit.config import load_config

        policy = load_config(_config_path(args.config)).data.check.model_dump(by_alias=True)
    report = check_parallel(args.src, args.tgt, max_len=args.max_len, max_ratio=args.max_ratio, policy=policy)
    print(report.table())
    if report.failed:
        print("data check failed", file=sys.stderr)
        return 1
    return 0


def cmd_data_fetch(args: argparse.Namespace) -> int:
    from attnkit.data.fetch import fetch_multi30k
    from attnkit.progress import DownloadProgress

    with DownloadProgress() as progress:
        paths = fetch_multi30k(args.dest, from_dir=args.from_dir, progress=progress.update)
    print(f"multi30k: {len(paths)} files verified in {args.dest}")
    return 0


def cmd_demo(args: argparse.Namespace) -> int:
    from attnkit.demo import run_demo

    return run_demo(minutes=args.minutes, data_dir=args.data, out=args.out)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="attnkit", description="Train, decode, evaluate and look inside attention models.")
    parser.add_argument("--version", action="version", version=f"attnkit {__version__}")
    parser.add_argument("-v", "--verbose", action="store_true", help="log debug messages")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = sub.add_parser("train", help="train a model from a YAML config", description="Train a model described by a YAML config (or a preset name such as m30k-small).")
    p.add_argument("config", help="config file or preset name (configs/*.yaml)")
    p.add_argument("--out", required=True, help="run folder for checkpoints, config.yaml and metrics.jsonl")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="override a config value, e.g. --set model.layers=6 (repeatable)")
    p.add_argument("--resume", action="store_true", help="continue the run in --out from its last checkpoint")
    p.add_argument("--data", help="folder holding the corpus (Multi30k: train.en.gz ...)")
    p.set_defaults(func=cmd_train)

    p = sub.add_parser("translate", help="translate text with a trained run", description="Translate one sentence a line (stdin or --input) to stdout or --output.")
    p.add_argument("run", help="run folder written by `attnkit train` or `attnkit average`")
    p.add_argument("--input", help="input file (default: stdin)")
    p.add_argument("--output", help="output file (default: stdout)")
    p.add_argument("--beam", type=int, help="beam size (1 = greedy; default: the run's decode.beam)")
    p.add_argument("--alpha", type=float, help="length penalty alpha (default: the run's decode.alpha)")
    p.add_argument("--nbest", type=int, default=1, help="print N hypotheses per line as `index<TAB>score<TAB>text`")
    p.add_argument("--attention", metavar="FILE.jsonl", help="also write source/target pieces and cross-attention per sentence")
    p.add_argument("--checkpoint", default="best", help="best (default), last, or a step number")
    p.add_argument("--batch-size", type=int, default=64, help="sentences per batch")
    p.add_argument("--dtype", choices=["fp32", "bf16"], default="fp32", help="bf16: decode with bfloat16 weights (faster on CPUs with bf16 units)")
    p.set_defaults(func=cmd_translate)

    p = sub.add_parser("evaluate", help="BLEU/chrF of a run on a test set, as JSON", description="Translate --src and score it against --ref (sacreBLEU, lowercased BLEU, chrF).")
    p.add_argument("run")
    p.add_argument("--src", required=True, help="source file")
    p.add_argument("--ref", required=True, help="reference file")
    p.add_argument("--beam", type=int, help="beam size (default: the run's decode.beam)")
    p.add_argument("--alpha", type=float, help="length penalty alpha")
    p.add_argument("--checkpoint", default="best", help="best (default), last, or a step number")
    p.add_argument("--batch-size", type=int, default=64, help="sentences per batch")
    p.add_argument("--dtype", choices=["fp32", "bf16"], default="fp32", help="bf16: decode with bfloat16 weights")
    p.set_defaults(func=cmd_evaluate)

    p = sub.add_parser("average", help="average the last N checkpoints into a new run folder", description="Average the weights of the last N checkpoints (Vaswani et al. sec. 6.1).")
    p.add_argument("run")
    p.add_argument("--last", type=int, required=True, help="how many of the latest checkpoints")
    p.add_argument("--out", required=True, help="new run folder")
    p.set_defaults(func=cmd_average)

    p = sub.add_parser("config", help="validate a config and print it fully resolved", description="Validate a config (with --set overrides) and print every setting.")
    p.add_argument("config")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    p.set_defaults(func=cmd_config)

    data = sub.add_parser("data", help="check or fetch data", description="Data tools.").add_subparsers(dest="data_command", required=True, metavar="COMMAND")
    p = data.add_parser("check", help="report problems in a parallel corpus", description="Line counts, blank lines, over-long pairs, invalid UTF-8, copies, duplicates and length-ratio outliers; exits 1 when a check fails.")
    p.add_argument("src")
    p.add_argument("tgt")
    p.add_argument("--config", help="take the fail/warn/skip policy from this config's data.check")
    p.add_argument("--max-len", type=int, default=250, help="tokens (whitespace-separated) per side")
    p.add_argument("--max-ratio", type=float, default=3.0, help="length ratio above which a pair is an outlier")
    p.set_defaults(func=cmd_data_check)
    p = data.add_parser("fetch", help="download a corpus and verify its checksums", description="Download Multi30k task 1 (raw en/de/fr/cs) and verify sha256 sums.")
    p.add_argument("corpus", choices=["multi30k"])
    p.add_argument("--dest", required=True, help="folder to write the files to")
    p.add_argument("--from", dest="from_dir", help="copy from this local folder instead of downloading")
    p.set_defaults(func=cmd_data_fetch)

    p = sub.add_parser("demo", help="the main job: train m30k-small briefly, translate, score and plot", description="Train m30k-small on Multi30k for a few minutes, translate test sentences, print BLEU and write a heatmap.")
    p.add_argument("--minutes", type=float, default=5.0, help="training time budget")
    p.add_argument("--data", help="Multi30k folder (default: data/multi30k or ../shared/data/multi30k, else download)")
    p.add_argument("--out", default="runs/demo", help="run folder (replaced if it holds an earlier demo)")
    p.set_defaults(func=cmd_demo)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.INFO, format="%(levelname)s: %(message)s")
    try:
        return args.func(args)
    except AttnkitError as e:
        print(f"attnkit: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("attnkit: interrupted", file=sys.stderr)
        return 130
    except OSError as e:
        where = f"{e.filename}: " if e.filename else ""
        print(f"attnkit: error: {where}{e.strerror or e}", file=sys.stderr)
        return 2
