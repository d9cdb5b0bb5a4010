"""`attnkit sweep`: train variants of a config for the same budget each and tabulate them (`attnkit.train.sweep`)."""

from __future__ import annotations

import argparse
from pathlib import Path

from attnkit.commands.presets import config_path
from attnkit.config.args import example, positive_float, positive_int


def _sweep_from_args(args: argparse.Namespace):
    """The `Sweep` of the command line: a run config with --grid, or a sweep file (its options overridable here)."""
    from attnkit.config.sweep import Sweep, budget_overrides, combine, file_axes, grid_axes, grid_variants, is_sweep_file, named_variants, read_sweep_file
    from attnkit.errors import ConfigError

    spec = config_path(args.config)
    if is_sweep_file(spec):
        sweep_file = read_sweep_file(spec)
        beside = spec.parent / sweep_file.config
        config = beside if beside.is_file() else config_path(sweep_file.config)
        named, axes, common = named_variants(sweep_file.variants), file_axes(sweep_file.grid), list(sweep_file.set)
        steps, minutes = (args.steps, args.minutes) if args.steps or args.minutes else (sweep_file.steps, sweep_file.minutes)
    else:
        config, named, axes, common, steps, minutes = spec, [], [], [], args.steps, args.minutes
    variants = combine(named, grid_variants(axes + grid_axes(args.grid)))
    if args.only:
        wanted = [name.strip() for name in args.only.split(",")]
        unknown = [name for name in wanted if name not in {v.name for v in variants}]
        if unknown:
            raise ConfigError(f"--only {args.only}: no variant {', '.join(unknown)} (variants: {', '.join(v.name for v in variants)})")
        variants = tuple(v for v in variants if v.name in wanted)
    return Sweep(config=Path(config), variants=variants, budget=budget_overrides(steps, minutes), common=(*common, *args.set))


def cmd_sweep(args: argparse.Namespace) -> int:
    from attnkit.train.sweep import run_sweep

    outcome = run_sweep(_sweep_from_args(args), args.out, jobs=args.workers, data_dir=args.data)
    if outcome.interrupted:
        return 0
    print(f"{len(outcome.rows)} variants trained; table: {Path(args.out) / 'table.md'} (and table.json, table.png)")
    return 0


def add(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "sweep",
        help="train variants of a config for a fixed budget each and tabulate them",
        description="Train each variant of a config (from --grid or a sweep file's named variants) for the same budget, "
        "one run folder each under --out, and write table.md, table.json and table.png. Rerun the same command to continue a stopped sweep.",
        epilog=example("attnkit sweep toy-reverse --grid model.heads=2,4 --steps 200 --out runs/sweep"),
    )
    p.add_argument("config", help="config file or preset name (configs/*.yaml), or a sweep file (configs/sweeps/*.yaml)")
    p.add_argument("--out", required=True, help="sweep folder: one run folder per variant, and the tables")
    p.add_argument("--grid", action="append", default=[], metavar="KEY=V1,V2,...", help="values of one key; several --grid make their product (repeatable)")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="override a config value in every variant (repeatable)")
    budget = p.add_mutually_exclusive_group()
    budget.add_argument("--steps", type=positive_int, help="updates per variant")
    budget.add_argument("--minutes", type=positive_float, help="minutes of training per variant")
    p.add_argument("--only", metavar="NAME,NAME", help="train only these variants (e.g. two rows of a sweep file, into their own --out)")
    p.add_argument("--workers", type=positive_int, default=1, help="variants trained at once, each in its own process (default 1: one after another)")
    p.add_argument("--data", help="folder holding the corpus (as attnkit train --data)")
    p.set_defaults(func=cmd_sweep)
