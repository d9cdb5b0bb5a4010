"""The translation family's `attnkit data` tools: `data check` (a parallel corpus) and `data fetch`
(Multi30k, WMT 2014), added under the core's `data` verb (`Family.data_commands`)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import Any

from attnkit.config.args import example, positive_float, positive_int
from attnkit.errors import AttnkitError, DataError
from attnkit.families.translation.config import CheckPolicy
from attnkit.families.translation.data.check import check_parallel
from attnkit.families.translation.data.fetch import fetch_multi30k
from attnkit.families.translation.data.wmt14 import fetch_wmt14
from attnkit.progress import DownloadProgress


def cmd_data_check(args: argparse.Namespace) -> int:
    policy = None
    if args.config:
        check = getattr(args.load_config(args.config).data, "check", None)
        if not isinstance(check, CheckPolicy):
            raise AttnkitError(f"{args.config}: its data section has no check policy (data.check)")
        policy = check.model_dump(by_alias=True)
    report = check_parallel(args.src, args.tgt, max_len=args.max_len, max_ratio=args.max_ratio, policy=policy)
    print(report.table())
    if report.failed:
        print("data check failed", file=sys.stderr)
        return 1
    return 0


def cmd_data_fetch(args: argparse.Namespace) -> int:
    if args.corpus == "multi30k":
        if args.pair:
            raise DataError("--pair is for wmt14 (multi30k fetches every language)")
        dest = args.out or "data/multi30k"
        with DownloadProgress() as progress:
            paths = fetch_multi30k(dest, from_dir=args.from_dir, progress=progress.update)
        print(f"multi30k: {len(paths)} files verified in {dest}")
        return 0
    pair = args.pair or "en-de"
    dest = args.out or f"data/wmt14-{pair}"
    with DownloadProgress() as progress:
        paths = fetch_wmt14(dest, pair, from_dir=args.from_dir, progress=progress.update)
    print(f"wmt14 {pair}: archives verified; {len(paths)} text files in {dest} ({', '.join(p.name for p in paths)})")
    return 0


def add_data_commands(data: argparse._SubParsersAction, load_config: Callable[[str], Any]) -> None:
    """`data check` and `data fetch`; `load_config(name)` reads `--config` (a file or a preset)."""
    p = data.add_parser(
        "check",
        help="report problems in a parallel corpus",
        description="Line counts, blank lines, over-long pairs, invalid UTF-8, copies, duplicates and length-ratio outliers; exits 1 when a check fails.",
        epilog=example("attnkit data check train.en train.de --config m30k-small"),
    )
    p.add_argument("src", help="source-side file, one sentence a line")
    p.add_argument("tgt", help="target-side file, line by line with SRC")
    p.add_argument("--config", help="take the fail/warn/skip policy from this config's data.check")
    p.add_argument("--max-len", type=positive_int, default=250, help="tokens (whitespace-separated) per side")
    p.add_argument("--max-ratio", type=positive_float, default=3.0, help="length ratio above which a pair is an outlier")
    p.set_defaults(func=cmd_data_check, load_config=load_config)
    p = data.add_parser(
        "fetch",
        help="download a corpus and verify its checksums",
        description="Download Multi30k task 1 (raw en/de/fr/cs), or the WMT 2014 training, newstest2013 and newstest2014 data of a pair, "
        "and verify the published checksums (docs/data.md).",
        epilog=example("attnkit data fetch multi30k --out data/multi30k"),
    )
    p.add_argument("corpus", choices=["multi30k", "wmt14"], help="the corpus to fetch")
    p.add_argument("--pair", choices=["en-de", "en-fr"], help="wmt14: the language pair (default en-de)")
    p.add_argument("--out", metavar="DIR", help="folder to write the files to (default data/multi30k or data/wmt14-PAIR, where the configs look)")
    p.add_argument("--from", dest="from_dir", help="copy the files (Multi30k) or archives (WMT14) from this local folder instead of downloading")
    p.set_defaults(func=cmd_data_fetch)
