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
from attnkit.errors import AttnkitError, DataError, WriteError

JEMALLOC_COMMANDS = {"train", "translate", "evaluate", "serve"}  # re-executed on jemalloc (allocator.py)

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


class Parser(argparse.ArgumentParser):
    """argparse with the house error format: one line `attnkit: error: ...`, exit status 2."""

    def error(self, message: str):
        self.exit(2, f"attnkit: error: {message} (see `{self.prog} --help`)\n")


def _number(kind: type, check, need: str):
    """An argparse type: `kind(text)`, refused with `need` unless `check(value)`."""

    def parse(text: str):
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
        if not check(value):
            raise argparse.ArgumentTypeError(f"must be {need}, got {text}")
        return value

    return parse


positive_int = _number(int, lambda v: v >= 1, ">= 1")
positive_float = _number(float, lambda v: v > 0, "> 0")
non_negative_float = _number(float, lambda v: v >= 0, ">= 0")
port = _number(int, lambda v: 0 <= v <= 65535, "a port number from 0 to 65535")


def cmd_config(args: argparse.Namespace) -> int:
    from attnkit.config import dump_config, load_config

    sys.stdout.write(dump_config(load_config(_config_path(args.config), args.set)))
    return 0


def _train_command(args: argparse.Namespace, resume: bool) -> str:
    """The `attnkit train` command line of `args`, with `--resume` or without."""
    sets = "".join(f" --set {s}" for s in args.set)
    data = f" --data {args.data}" if args.data else ""
    return f"attnkit train {args.config} --out {args.out}{sets}{data}" + (" --resume" if resume else "")


def cmd_train(args: argparse.Namespace) -> int:
    from attnkit.config import load_config
    from attnkit.train.checkpoint import checkpoint_dirs
    from attnkit.train.distributed import world_from_env
    from attnkit.train.loop import train
    from attnkit.progress import TrainProgress

    run = load_config(_config_path(args.config), args.set)
    try:
        with TrainProgress(run.train) as progress:
            state = train(run, args.out, resume=args.resume, data_dir=args.data, on_event=progress.event)
    except WriteError as e:  # a full or read-only disk: the last checkpoint is intact, say how to go on
        resume = bool(checkpoint_dirs(args.out))
        how = "resume with" if resume else "start again with"
        raise WriteError(f"{e}; once space is freed (or the disk is writable), {how}: {_train_command(args, resume)}") from None
    if not world_from_env().is_main:  # under torchrun, rank 0 reports
        return 0
    best = f", best {run.train.early_stopping} {abs(state.best):.4g}" if state.best is not None else ""
    if state.interrupted:
        print(f"stopped by {state.interrupted} at step {state.step}; checkpoint saved in {args.out}. "
              f"Resume with: {_train_command(args, resume=True)}")  # fmt: skip
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
    loaded = load_run(args.run, args.checkpoint, dtype=torch_dtype(args.dtype), task="translation")
    d = loaded.run.decode
    settings = SearchSettings(beam=args.beam or d.beam, alpha=d.alpha if args.alpha is None else args.alpha,
                              nbest=args.nbest, max_len_a=d.max_len_a, max_len_b=d.max_len_b, batch_size=args.batch_size,
                              workers=args.workers)  # fmt: skip
    if settings.nbest > settings.beam:
        raise AttnkitError(f"--nbest {settings.nbest} must be <= --beam {settings.beam}")
    lines = _read_input(args.input)
    with counter(len(lines), "translating", unit="sent") as bar:
        results = translate(loaded.model, loaded.vocabs, lines, settings, return_attention=args.attention is not None, progress=bar.update,
                            source=args.input or "<stdin>")  # fmt: skip
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
    from attnkit.runs import read_run

    run, _ = read_run(args.run)
    if run.task == "classification":
        if args.src or args.ref or not args.data:
            raise AttnkitError(f"{args.run}: a sentence classifier: evaluate it with --data FILE (--src/--ref are for translation runs)")
        from attnkit.evaluate.classify import evaluate_labelled
        from attnkit.runs import load_run

        report = evaluate_labelled(load_run(args.run, args.checkpoint, task="classification"), args.data, args.batch_size)
        print(json.dumps(report, indent=1))
        return 0
    if args.data or not (args.src and args.ref):
        raise AttnkitError(f"{args.run}: a translation run: evaluate it with --src FILE --ref FILE (--data is for sentence classifiers)")
    report = evaluate_run(args.run, args.src, args.ref, beam=args.beam, alpha=args.alpha, checkpoint=args.checkpoint,
                          batch_size=args.batch_size, dtype=torch_dtype(args.dtype), workers=args.workers)  # fmt: skip
    print(json.dumps(report, indent=1))
    return 0


def _classifier(args: argparse.Namespace):
    from attnkit.runs import load_run

    return load_run(args.run, args.checkpoint, task="classification")


def _texts(args: argparse.Namespace) -> tuple[list[str], str]:
    """The texts to classify (the TEXT arguments, --input or stdin) and how errors name one."""
    if getattr(args, "text", None):
        return list(args.text), "text"
    return _read_input(args.input), f"{args.input or '<stdin>'}, line"


def cmd_classify(args: argparse.Namespace) -> int:
    from dataclasses import asdict

    from attnkit.evaluate.classify import classify_texts

    texts, source = _texts(args)
    results = classify_texts(_classifier(args), texts, args.batch_size, source=source)
    for r in results:
        if args.jsonl:
            print(json.dumps(asdict(r), ensure_ascii=False))
        else:
            print(r.label + "\t" + " ".join(f"{label}={p:.4f}" for label, p in r.probs.items()))
    return 0


def cmd_embed(args: argparse.Namespace) -> int:
    import numpy as np

    from attnkit.evaluate.classify import embed_texts
    from attnkit.io import atomic_path

    if Path(args.out).is_dir():
        raise AttnkitError(f"{args.out}: is a directory, expected a .npy file path")
    texts, source = _texts(args)
    matrix = embed_texts(_classifier(args), texts, args.batch_size, mean_hops=args.mean_hops, source=source)
    with atomic_path(args.out) as tmp, open(tmp, "wb") as f:
        np.save(f, matrix)
    print(f"{matrix.shape[0]} embeddings of size {matrix.shape[1]} written to {args.out}")
    return 0


def cmd_explain(args: argparse.Namespace) -> int:
    from attnkit.evaluate.classify import classify_texts
    from attnkit.viz.explain import write_html, write_png

    if not args.text and not args.input:
        raise AttnkitError("give a sentence (or several) or --input FILE")
    loaded = _classifier(args)
    if loaded.run.model.pooling != "attention":
        raise AttnkitError(f"{args.run}: model.pooling is {loaded.run.model.pooling!r}; only attention pooling has weights to show")
    texts, source = _texts(args)
    results = classify_texts(loaded, texts, args.batch_size, source=source)
    write_html(args.html, results, title=f"attnkit explain: {args.run}")
    if args.png:
        write_png(args.png, results)
    print(f"wrote {args.html}" + (f" and {args.png}" if args.png else ""))
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


def _explore_inputs(args: argparse.Namespace):
    """The run, the sentences (TEXT, --input or stdin) and the decoding settings of `plot`/`report`."""
    from attnkit.runs import load_run
    from attnkit.viz.explore import search_settings

    if args.text is not None and args.input:
        raise AttnkitError("give a sentence or --input FILE, not both")
    lines = [args.text] if args.text is not None else _read_input(args.input)
    loaded = load_run(args.run, args.checkpoint, dtype=torch_dtype(args.dtype))
    return loaded, lines, search_settings(loaded.run.decode, args.beam, args.alpha, args.nbest)


def cmd_plot(args: argparse.Namespace) -> int:
    from attnkit.viz.explore import explore
    from attnkit.viz.plot import plot_maps

    loaded, lines, settings = _explore_inputs(args)
    files = plot_maps(explore(loaded, lines, settings, words=args.words), args.out)
    print(f"wrote {len(files)} heatmaps to {args.out}")
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    from attnkit.viz.report import report_records, write_report

    loaded, lines, settings = _explore_inputs(args)
    write_report(report_records(loaded, lines, settings, words=args.words), args.out, title=f"attnkit report: {Path(args.run).name}")
    print(f"wrote {args.out}")
    return 0


def cmd_serve(args: argparse.Namespace) -> int:
    from attnkit.serve.app import Batching, Limits, serve

    serve(args.runs, host=args.host, port=args.port, limits=Limits(args.max_texts, args.max_chars),
          batching=Batching(args.batch_window_ms, args.max_batch), checkpoint=args.checkpoint, dtype=torch_dtype(args.dtype))  # fmt: skip
    return 0


def cmd_demo(args: argparse.Namespace) -> int:
    from attnkit.demo import run_demo

    return run_demo(minutes=args.minutes, data_dir=args.data, out=args.out)


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="attnkit", description="Train, decode, evaluate and look inside attention models.")
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
    p.add_argument("--beam", type=positive_int, help="beam size (1 = greedy; default: the run's decode.beam)")
    p.add_argument("--alpha", type=non_negative_float, help="length penalty alpha (default: the run's decode.alpha)")
    p.add_argument("--nbest", type=positive_int, default=1, help="print N hypotheses per line as `index<TAB>score<TAB>text`")
    p.add_argument("--attention", metavar="FILE.jsonl", help="also write source/target pieces and cross-attention per sentence")
    p.add_argument("--checkpoint", default="best", help="best (default), last, or a step number")
    p.add_argument("--batch-size", type=positive_int, default=64, help="sentences per batch")
    p.add_argument("--dtype", choices=["fp32", "bf16"], default="fp32", help="bf16: decode with bfloat16 weights (faster on CPUs with bf16 units)")
    p.add_argument("--workers", type=positive_int, help="CPU: batches decoded at once, one thread each (default: the number of threads)")
    p.set_defaults(func=cmd_translate)

    p = sub.add_parser("evaluate", help="score a run on a test set, as JSON", description="Translation runs: translate --src and score it against --ref (sacreBLEU, lowercased BLEU, chrF). Sentence classifiers: accuracy, macro-F1 and the confusion matrix on --data.")
    p.add_argument("run")
    p.add_argument("--src", help="source file (translation)")
    p.add_argument("--ref", help="reference file (translation)")
    p.add_argument("--data", help="labelled file (sentence classifiers): SST trees, SNLI TSV, or TSV/CSV/JSONL with the run's columns")
    p.add_argument("--beam", type=positive_int, help="beam size (default: the run's decode.beam)")
    p.add_argument("--alpha", type=non_negative_float, help="length penalty alpha")
    p.add_argument("--checkpoint", default="best", help="best (default), last, or a step number")
    p.add_argument("--batch-size", type=positive_int, default=64, help="sentences per batch")
    p.add_argument("--dtype", choices=["fp32", "bf16"], default="fp32", help="bf16: decode with bfloat16 weights")
    p.add_argument("--workers", type=positive_int, help="CPU: batches decoded at once, one thread each (default: the number of threads)")
    p.set_defaults(func=cmd_evaluate)

    for name, help in (("classify", "label and class probabilities of each sentence"),
                       ("embed", "sentence embeddings M (r x 2u, flattened) as .npy"),
                       ("explain", "HTML/PNG of the words each attention hop looked at")):  # fmt: skip
        p = sub.add_parser(name, help=help, description=f"Sentence classifiers (sase runs): {help}. One sentence a line (premise<TAB>hypothesis for pair models).")
        p.add_argument("run", help="run folder of a sase model")
        if name == "explain":
            p.add_argument("text", nargs="*", help="sentences to explain (or --input)")
            p.add_argument("--html", required=True, metavar="OUT.html", help="self-contained HTML page")
            p.add_argument("--png", metavar="OUT.png", help="also a PNG image")
        p.add_argument("--input", help="input file, one sentence a line (default: stdin)")
        if name == "embed":
            p.add_argument("--out", required=True, metavar="X.npy", help="output .npy file (N rows)")
            p.add_argument("--mean-hops", action="store_true", help="the mean over the r hops (N x 2u) instead of flattened M")
        if name == "classify":
            p.add_argument("--jsonl", action="store_true", help="one JSON object a line: label, probs, tokens, attention")
        p.add_argument("--checkpoint", default="best", help="best (default), last, or a step number")
        p.add_argument("--batch-size", type=positive_int, default=64, help="sentences per batch")
        p.set_defaults(func={"classify": cmd_classify, "embed": cmd_embed, "explain": cmd_explain}[name])

    p = sub.add_parser("average", help="average the last N checkpoints into a new run folder", description="Average the weights of the last N checkpoints (Vaswani et al. sec. 6.1).")
    p.add_argument("run")
    p.add_argument("--last", type=positive_int, required=True, help="how many of the latest checkpoints")
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
    p.add_argument("--max-len", type=positive_int, default=250, help="tokens (whitespace-separated) per side")
    p.add_argument("--max-ratio", type=positive_float, default=3.0, help="length ratio above which a pair is an outlier")
    p.set_defaults(func=cmd_data_check)
    p = data.add_parser("fetch", help="download a corpus and verify its checksums", description="Download Multi30k task 1 (raw en/de/fr/cs) and verify sha256 sums.")
    p.add_argument("corpus", choices=["multi30k"])
    p.add_argument("--dest", required=True, help="folder to write the files to")
    p.add_argument("--from", dest="from_dir", help="copy from this local folder instead of downloading")
    p.set_defaults(func=cmd_data_fetch)

    for name, help, out in (("plot", "PNG heatmaps of every attention map of a translation", "folder for the PNG files"),
                            ("report", "a self-contained HTML report of translations and their attention", "the HTML file to write")):  # fmt: skip
        p = sub.add_parser(name, help=help, description=f"{help[0].upper()}{help[1:]} (TEXT, --input or stdin; docs/explorer.md).")
        p.add_argument("run", help="run folder of a translation model" + (" or a sentence classifier" if name == "report" else ""))
        p.add_argument("text", nargs="?", help="a sentence (instead of --input)")
        p.add_argument("--input", help="one sentence a line")
        p.add_argument("--out", required=True, help=out)
        p.add_argument("--words", action="store_true", help="merge subword pieces into words (keys summed, queries averaged)")
        p.add_argument("--beam", type=positive_int, help="beam size (1 = greedy; default: the run's decode.beam)")
        p.add_argument("--alpha", type=non_negative_float, help="length penalty alpha (default: the run's decode.alpha)")
        if name == "report":
            p.add_argument("--nbest", type=positive_int, help="hypotheses listed per sentence (default: the beam size)")
        p.add_argument("--checkpoint", default="best", help="best (default), last, or a step number")
        p.add_argument("--dtype", choices=["fp32", "bf16"], default="fp32", help="bf16: decode with bfloat16 weights")
        p.set_defaults(func=cmd_plot if name == "plot" else cmd_report, nbest=None)

    p = sub.add_parser("serve", help="a local web UI and JSON API for translation and classification",
                       description="Serve runs on a local web page and a JSON API (/v1/translate, /v1/classify, /v1/models, /healthz, /openapi.json). "
                                   "Limits, each answered 413 with the limit in the message: --max-texts texts per request, --max-chars characters "
                                   "per text, and a request body of at most max-texts x (6 x max-chars + 8) + 4096 bytes (388,608 with the "
                                   "defaults), checked before the JSON is parsed: from Content-Length, or counted as a chunked body arrives.")  # fmt: skip
    p.add_argument("runs", nargs="+", metavar="RUN", help="run folders (each served under its folder name)")
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1: this machine only)")
    p.add_argument("--port", type=port, default=8000, help="TCP port (0: any free port)")
    p.add_argument("--max-texts", type=positive_int, default=64, help="texts per request (more: 413); also sets the body limit")
    p.add_argument("--max-chars", type=positive_int, default=1000, help="characters per text (more: 413); also sets the body limit")
    p.add_argument("--batch-window-ms", type=non_negative_float, default=5.0, help="how long a batch waits for more requests")
    p.add_argument("--max-batch", type=positive_int, default=32, help="texts per model call (1 = no dynamic batching)")
    p.add_argument("--checkpoint", default="best", help="best (default), last, or a step number")
    p.add_argument("--dtype", choices=["fp32", "bf16"], default="fp32", help="bf16: decode with bfloat16 weights")
    p.set_defaults(func=cmd_serve)

    p = sub.add_parser("demo", help="the main job: train m30k-small briefly, translate, score and plot", description="Train m30k-small on Multi30k for a few minutes, translate test sentences, print BLEU and write a heatmap.")
    p.add_argument("--minutes", type=positive_float, default=5.0, help="training time budget")
    p.add_argument("--data", help="Multi30k folder (default: data/multi30k or ../shared/data/multi30k, else download)")
    p.add_argument("--out", default="runs/demo", help="run folder (replaced if it holds an earlier demo)")
    p.set_defaults(func=cmd_demo)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as e:  # --help, --version, or a usage error already printed as one line
        return 0 if e.code is None else int(e.code)
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.INFO, format="%(levelname)s: %(message)s")
    if argv is None and args.command in JEMALLOC_COMMANDS:  # a real command line, not a library call
        from attnkit.allocator import use_jemalloc

        use_jemalloc(["-m", "attnkit", *sys.argv[1:]])
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
