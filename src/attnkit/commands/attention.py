"""`attnkit attention SOURCE TEXT --out FILE.npz`: every attention map of one input, as arrays.

SOURCE is an attnkit run folder, a Hugging Face model folder or a hub id (`attnkit.sources`);
docs/explorer.md lists what the npz holds.
"""

from __future__ import annotations

import argparse
import json

from attnkit.config.args import example, non_negative_int, positive_int


def cmd_attention(args: argparse.Namespace) -> int:
    from attnkit.sources import AttentionOptions, export_attention

    options = AttentionOptions(
        target=args.target, image=args.image, truncate=args.truncate, words=args.words, flow=args.flow,
        attribute=tuple(args.attribute or ()), output=args.attribute_target, max_new_tokens=args.max_new_tokens, checkpoint=args.checkpoint,
    )  # fmt: skip
    summary = export_attention(args.source, args.text, args.out, options)
    print(json.dumps(summary))
    return 0


def add(sub: argparse._SubParsersAction) -> None:
    from attnkit.sources.options import FLOW_HELP, FLOWS, METHODS

    p = sub.add_parser(
        "attention",
        help="every attention map of one input as one .npz (attnkit runs and Hugging Face models)",
        description="Write tokens and one (heads, queries, keys) float32 array per kind and layer, <kind>/layer<l>, "
        "plus rollout (and flow, attributions) for one input (docs/explorer.md).",
        epilog=example('attnkit attention bert-base-uncased "The cat sat on the mat." --out cat.npz'),
    )
    p.add_argument("source", help="an attnkit run folder, a Hugging Face model folder (save_pretrained) or a hub id")
    p.add_argument("text", nargs="?", help="the input text (a vision model or a caption run: the image, or --image)")
    p.add_argument("--out", required=True, help="the .npz file to write")
    p.add_argument("--target", help="encoder-decoder models: the target to attend over (default: the model's greedy output)")
    p.add_argument("--image", help="vision models and caption runs: the image file")
    p.add_argument("--truncate", action="store_true", help="cut a text longer than the model's positions (default: refuse it)")
    p.add_argument("--words", action="store_true", help="merge subword pieces into words (keys summed, queries averaged)")
    p.add_argument("--flow", nargs="?", const="explained", choices=FLOWS, help=FLOW_HELP)
    p.add_argument("--attribute", nargs="+", choices=METHODS, help="attributions of one output: ixg (input x gradient), ig (integrated gradients)")
    p.add_argument("--attribute-target", type=non_negative_int, metavar="N",
                   help="with --attribute: the output attributed: a class, a next-token id, or a target position (default: the model's own)")  # fmt: skip
    p.add_argument("--max-new-tokens", type=positive_int, help="encoder-decoder models: the longest greedy output (default: 2 x input + 10)")
    p.add_argument("--checkpoint", default="best", help="attnkit runs: best (default), last, or a step number")
    p.set_defaults(func=cmd_attention)
