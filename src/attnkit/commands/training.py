"""`attnkit train`, `config`, `average` and `demo`."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping
from typing import Any

from attnkit.commands import init
from attnkit.commands.presets import config_path
from attnkit.config.args import example, positive_float, positive_int

__all__ = ["add", "config_path"]


def cmd_config(args: argparse.Namespace) -> int:
    from attnkit.config import dump_config
    from attnkit.families import load_config

    sys.stdout.write(dump_config(load_config(config_path(args.config), args.set)))
    return 0


def _train_command(args: argparse.Namespace, resume: bool) -> str:
    """The `attnkit train` command line of `args`, with `--resume` or without."""
    files = init.family_words(args, args.family_files) if args.config in args.family_files else ""
    sets = "".join(f" --set {s}" for s in args.set)
    data = f" --data {args.data}" if args.data else ""
    start = f" --init {args.init}" if args.init and not resume else ""
    return f"attnkit train {args.config}{files} --out {args.out}{sets}{data}{start}" + (" --resume" if resume else "")


def _run(args: argparse.Namespace) -> Any:
    """The run to train: init's config for a family's files (`attnkit train FAMILY --train ...`), else the config file or preset."""
    from attnkit.families import load_config

    path = None if args.config in args.family_files else config_path(args.config, list(args.family_files))  # a typo: "did you mean"
    run = init.family_run(args, args.family_files)
    return run if run is not None else load_config(path, args.set)


def cmd_train(args: argparse.Namespace) -> int:
    from attnkit.artifacts.checkpoint import checkpoint_dirs
    from attnkit.errors import WriteError
    from attnkit.progress import TrainProgress
    from attnkit.train.distributed import world_from_env
    from attnkit.train.loop import train

    run = _run(args)
    try:
        with TrainProgress(run) as progress:
            state = train(run, args.out, resume=args.resume, data_dir=args.data, on_event=progress.event, init=args.init)
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
    early = f" (stopped early: {run.train.patience} evaluations without a better {run.train.early_stopping})" if state.stopped_early else ""
    print(f"trained {state.step} steps in {state.elapsed / 60:.1f} min{best}{early}; run folder: {args.out}")
    return 0


def cmd_average(args: argparse.Namespace) -> int:
    from attnkit.artifacts.average import average_run
    from attnkit.families import load_run

    load_run(args.run, "last")  # a run folder every command can load: config, run.json and weights agree
    out = average_run(args.run, args.last, args.out)
    print(f"averaged the last {args.last} checkpoints of {args.run} into {out}")
    return 0


def cmd_demo(args: argparse.Namespace) -> int:
    from attnkit.demo import run_demo

    return run_demo(steps=args.steps, minutes=args.minutes, data_dir=args.data, out=args.out)


def add(sub: argparse._SubParsersAction, families: Mapping[str, Any]) -> None:
    names = " | ".join(init.starters(families))
    p = sub.add_parser(
        "train",
        usage="attnkit train [-h] CONFIG --out RUN [--set KEY=VALUE] [--resume] [--data DATA] [--init RUN]\n"
        "       attnkit train [-h] FAMILY --train FILE... --valid FILE... [FAMILY's options] --out RUN [--set KEY=VALUE] [--resume]",
        help="train a model from a YAML config, a preset, or your own files (`--init` starts from an imported Hugging Face model)",
        description="Train a model described by a YAML config, a preset (such as m30k-small; `attnkit presets` lists them), or your own "
        f"files: `attnkit train FAMILY --train ... --valid ...` ({names}) checks them, trains the config `attnkit init FAMILY` would "
        "write for them and keeps it as the run's config.yaml (docs/your-data.md).",
        epilog=example(
            "attnkit train toy-reverse --out runs/toy", "attnkit train translation --train a.en a.de --valid b.en b.de --out runs/my-translation"
        ),  # fmt: skip
    )
    p.add_argument("config", metavar="CONFIG", help=f"a config file, a preset name (`attnkit presets`), or a family with your files: {names}")
    p.add_argument("--out", required=True, metavar="RUN", help="run folder for checkpoints, config.yaml and metrics.jsonl")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="override a config value, e.g. --set model.layers=6 (repeatable)")
    p.add_argument("--resume", action="store_true", help="continue the run in --out from its last checkpoint")
    p.add_argument("--data", help="folder holding the corpus (Multi30k: train.en.gz ...)")
    p.add_argument(
        "--init", metavar="RUN", help="start from this run's weights and tokenizer (e.g. one made by `attnkit import hf`; --resume does not need it again)"
    )
    p.set_defaults(func=cmd_train, family_files=init.add_family_files(p, families))

    p = sub.add_parser(
        "average",
        help="average the last N checkpoints into a new run folder",
        description="Average the weights of the last N checkpoints (Vaswani et al. sec. 6.1).",
        epilog=example("attnkit average runs/m30k --last 5 --out runs/m30k-avg5"),
    )
    p.add_argument("run", help="run folder")
    p.add_argument("--last", type=positive_int, required=True, help="how many of the latest checkpoints")
    p.add_argument("--out", required=True, help="new run folder")
    p.set_defaults(func=cmd_average)

    p = sub.add_parser(
        "config",
        help="validate a config and print it fully resolved",
        description="Validate a config (with --set overrides) and print every setting.",
        epilog=example("attnkit config m30k-small --set model.layers=6"),
    )
    p.add_argument("config", help="config file or preset name (`attnkit presets`)")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="override a config value (repeatable)")
    p.set_defaults(func=cmd_config)

    p = sub.add_parser(
        "demo",
        help="the first run: train a translator for a few minutes, translate, score and show its attention",
        description="Train the Luong-attention LSTM on Multi30k En->De for a few hundred updates, translate the test set (beam 5), print BLEU "
        "and samples, write a cross-attention heatmap and an HTML report, and print the command that serves the model.",
        epilog=example("attnkit demo --minutes 3"),
    )
    p.add_argument("--steps", type=positive_int, help='updates to train (default: the demo\'s own number, README "The demo")')
    p.add_argument("--minutes", type=positive_float, default=6.0, help="stop training earlier once this many minutes have passed")
    p.add_argument("--data", help="Multi30k folder (default: data/multi30k or ../shared/data/multi30k, else download)")
    p.add_argument("--out", default="runs/demo", help="run folder (replaced if it holds an earlier demo)")
    p.set_defaults(func=cmd_demo)
