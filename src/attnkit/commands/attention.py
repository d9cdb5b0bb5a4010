"""`attnkit attention SOURCE TEXT --out FILE.npz`: every attention map of one input, as arrays.

SOURCE is an attnkit run folder, a Hugging Face model folder or a hub id (`attnkit.sources`);
docs/explorer.md lists what the npz holds. `--document FILE` (`-`: stdin) reads the input from a
file, whole; `--input FILE --out DIR` writes one npz per line of FILE into DIR (`attnkit.sources.inputs`:
resumable, split across torchrun's ranks); `--long` takes a long input through a Hugging Face decoder or encoder without eager attention
(summaries, pooled maps, exact rows and rollout rows: `attnkit.sources.hf.long`).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import TYPE_CHECKING

from attnkit.config.args import example, non_negative_int, positive_int, read_document
from attnkit.errors import AttnkitError

if TYPE_CHECKING:
    from attnkit.sources import AttentionOptions


def _text(args: argparse.Namespace) -> str | None:
    if args.document is not None and args.text is not None:
        raise AttnkitError(f"give the text or --document {args.document}, not both")
    return read_document(args.document) if args.document is not None else args.text


def _budget(args: argparse.Namespace) -> int | None:
    from attnkit.sources.hf.long.budget import parse_size

    return parse_size(args.max_memory) if args.max_memory else None


def _long(args: argparse.Namespace, text: str | None) -> dict:
    from attnkit.sources.hf.long import LongOptions, export_long
    from attnkit.sources.hf.long.options import refuse_run

    refuse_run(args.source)
    if text is None:
        raise AttnkitError("--long: give the text or --document FILE")
    if args.flow or args.attribute or args.words:
        raise AttnkitError("--long writes summaries, pooled maps, exact rows and rollout rows; --flow, --attribute and --words need the full maps")
    options = LongOptions(
        mode=args.long, rows=tuple(args.rows or ()), layers=tuple(args.layers) if args.layers else None, heads=tuple(args.heads) if args.heads else None,
        window=args.window, max_memory=_budget(args), truncate=args.truncate, new_tokens=args.max_new_tokens,
    )  # fmt: skip
    return export_long(args.source, text, args.out, options)


def _options(args: argparse.Namespace) -> AttentionOptions:
    from attnkit.sources import AttentionOptions

    if args.rows or args.layers or args.heads:
        raise AttnkitError("--rows, --layers and --heads go with --long")
    return AttentionOptions(
        target=args.target, image=args.image, truncate=args.truncate, words=args.words, flow=args.flow,
        attribute=tuple(args.attribute or ()), output=args.attribute_target, max_new_tokens=args.max_new_tokens, checkpoint=args.checkpoint,
        max_memory=_budget(args),
    )  # fmt: skip


def _inputs(args: argparse.Namespace) -> int:
    """`--input FILE --out DIR`: one npz per line (`sources.inputs`; resumable, SIGTERM as SIGINT; split across torchrun's ranks)."""
    from attnkit.commands.ranks import ranks
    from attnkit.io import interruptible
    from attnkit.progress import counter, moves
    from attnkit.sources import open_source
    from attnkit.sources.inputs import INDEX, export_inputs, inputs_of

    given = [name for name, value in (("a TEXT", args.text), ("--document", args.document), ("--long", args.long)) if value is not None]
    if given:
        raise AttnkitError(f"--input {args.input} takes its inputs from the file, one a line; leave out {' and '.join(given)}")
    options = _options(args)
    inputs = inputs_of(args.input)  # a bad file is refused before the model loads
    opened = open_source(args.source, options.checkpoint)
    with interruptible(), ranks() as shard, counter(0, "attention", unit="input") as bar:
        summary = export_inputs(opened, inputs, args.input, args.out, options, shard, moves(bar))
    if summary is None:  # a rank other than 0 under torchrun
        print(f"rank {shard.rank}: its inputs are listed in {Path(args.out) / shard.file(INDEX)}; {INDEX} is rank 0's")
        return 0
    print(json.dumps(summary))
    return 0


def cmd_attention(args: argparse.Namespace) -> int:
    from attnkit.sources import export_attention

    if args.input is not None:
        return _inputs(args)
    text = _text(args)
    if args.long:
        print(json.dumps(_long(args, text)))
        return 0
    summary = export_attention(args.source, text, args.out, _options(args))
    print(json.dumps(summary))
    return 0


def _add_long(p: argparse.ArgumentParser) -> None:
    from attnkit.sources.hf.long.options import MODES

    p.add_argument("--long", nargs="?", const="all", choices=MODES,
                   help="a long input through a Hugging Face decoder or encoder, its own attention kernel kept: per-layer and -head summaries, "
                   "pooled maps, exact rows and rollout rows instead of every map (`--long` alone: all; `--long rows`: exact rows only)")  # fmt: skip
    p.add_argument("--rows", nargs="+", metavar="Q", help="with --long: the query positions of the exact rows and rollout rows: q (negative "
                   "from the end) or a:b (default: a decoder's last token, an encoder's first)")  # fmt: skip
    p.add_argument("--layers", nargs="+", type=positive_int, metavar="L", help="with --long: keep these layers only (1 is the first; default: all)")
    p.add_argument("--heads", nargs="+", type=non_negative_int, metavar="H", help="with --long: the heads of the exact rows (0 is the first; default: all)")
    p.add_argument("--window", type=positive_int, default=64, help="with --long: the local window of the `local` summary, in tokens")
    p.add_argument("--max-memory", metavar="SIZE", help="Hugging Face text models: the memory budget, e.g. 8G (default: half of the memory available)")


def add(sub: argparse._SubParsersAction) -> None:
    from attnkit.sources.options import FLOW_HELP, FLOWS, METHODS

    p = sub.add_parser(
        "attention",
        help="every attention map of one input as one .npz, or of each line of a file (attnkit runs and Hugging Face models)",
        description="Write tokens and one (heads, queries, keys) float32 array per kind and layer, <kind>/layer<l>, "
        "plus rollout (and flow, attributions) for one input; or, with --long, what a long input needs (docs/explorer.md).",
        epilog=example('attnkit attention bert-base-uncased "The cat sat on the mat." --out cat.npz',
                       "attnkit attention MODEL --document book.txt --long --rows -1 --out book.npz",
                       "attnkit attention bert-base-uncased --input texts.txt --out maps/"),
    )  # fmt: skip
    p.add_argument("source", help="an attnkit run folder, a Hugging Face model folder (save_pretrained) or a hub id")
    p.add_argument("text", nargs="?", help="the input text (a vision model or a caption run: the image, or --image)")
    p.add_argument("--document", metavar="FILE", help="read the input text from FILE, whole (`-`: stdin)")
    p.add_argument("--input", metavar="FILE", help="a file of inputs, one a line: one .npz each into the folder --out, named by line number "
                   "(DIR/000001.npz), and DIR/index.jsonl; resumable, and split across torchrun's ranks")  # fmt: skip
    p.add_argument("--out", required=True, help="the .npz file to write (with --input: a folder)")
    p.add_argument("--target", help="encoder-decoder models and translation runs: the target to attend over (forced decoding; default: the model's own output)")
    p.add_argument("--image", help="vision models and caption runs: the image file")
    p.add_argument("--truncate", action="store_true", help="cut a text longer than the model's positions (default: refuse it)")
    p.add_argument("--words", action="store_true", help="merge subword pieces into words (keys summed, queries averaged)")
    p.add_argument("--flow", nargs="?", const="explained", choices=FLOWS, help=FLOW_HELP)
    p.add_argument("--attribute", nargs="+", choices=METHODS, help="attributions of one output: ixg (input x gradient), ig (integrated gradients)")
    p.add_argument("--attribute-target", type=non_negative_int, metavar="N",
                   help="with --attribute: the output attributed: a class, a next-token id, or a target position (default: the model's own)")  # fmt: skip
    p.add_argument(
        "--max-new-tokens",
        type=positive_int,
        help="encoder-decoder models: the longest greedy output (default: 2 x input + 10); with --long: "
        "generate this many tokens greedily and write the attention row of each",
    )
    p.add_argument("--checkpoint", default="best", help="attnkit runs: best (default), last, or a step number")
    _add_long(p)
    p.set_defaults(func=cmd_attention)
