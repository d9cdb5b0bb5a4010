"""The captioning family's CLI: `attnkit caption`, its options of `attnkit evaluate`, and its
`attnkit data` tool, `data caption-shapes`."""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from pathlib import Path

from attnkit import extras
from attnkit.artifacts.runs import LoadedRun, load_run
from attnkit.config.args import add_checkpoint, example, positive_int
from attnkit.errors import AttnkitError
from attnkit.families.captioning.captions import read_captioned_images
from attnkit.families.captioning.figure import attention_strip
from attnkit.families.captioning.images import open_image, resize_for_encoder
from attnkit.families.captioning.infer import caption_images
from attnkit.families.captioning.scores import FEATURE, coco_scores
from attnkit.families.protocol import WritePage, add_once
from attnkit.progress import counter


def add_commands(sub: argparse._SubParsersAction, family: object, write_page: WritePage) -> None:
    p = sub.add_parser("caption", help="captions of images (Show, Attend and Tell runs)",
                       description="Caption images with a show_attend_tell run; --out FILE.png draws where each word looked.",
                       epilog=example("attnkit caption runs/caption-shapes data/shapes/images_valid/valid00000.png --out where.png"))  # fmt: skip
    p.add_argument("run", help="run folder of a show_attend_tell model")
    p.add_argument("images", nargs="+", metavar="IMAGE", help="image files (JPEG, PNG, ...)")
    p.add_argument("--beam", type=positive_int, help="beam size (1 = greedy; default: the run's decode.beam)")
    p.add_argument("--nbest", type=positive_int, help="print this many captions per image (<= beam)")
    p.add_argument("--alpha", type=float, help="length penalty (default: the run's decode.alpha)")
    p.add_argument("--out", metavar="OUT.png", help="the attention figure (one strip per image: OUT.png, or OUT-N.png for several)")
    p.add_argument("--jsonl", action="store_true", help="one JSON object a line: caption, words, attention, n-best")
    add_checkpoint(p)
    p.add_argument("--batch-size", type=positive_int, default=16, help="images per batch")
    p.set_defaults(func=cmd_caption, family=family, group="use")


def add_data_commands(data: argparse._SubParsersAction, load_config: Callable[[str], object]) -> None:
    """`data caption-shapes`: a generated captioned image set."""
    s = data.add_parser("caption-shapes", help="write a generated captioned image set (coloured shapes and their places)",
                        description="Seeded coloured shapes at places of a 3 x 3 layout, captions naming them (docs/caption.md).",
                        epilog=example("attnkit data caption-shapes --out data/shapes"))  # fmt: skip
    s.add_argument("--train-size", type=positive_int, default=2000, help="training images")
    s.add_argument("--valid-size", type=positive_int, default=200, help="validation images")
    s.add_argument("--size", type=positive_int, default=48, help="image side in pixels")
    s.add_argument("--seed", type=int, default=0, help="random seed of the shapes, places and colours")
    s.add_argument("--out", required=True, metavar="DIR", help="the folder to write images_{train,valid}/ and captions_{train,valid}.txt into")
    s.set_defaults(func=cmd_shapes)


def cmd_shapes(args: argparse.Namespace) -> int:
    from attnkit.families.captioning.shapes import write_shapes

    scenes = write_shapes(args.out, {"train": args.train_size, "valid": args.valid_size}, seed=args.seed, size=args.size)
    print(f"wrote {sum(map(len, scenes.values()))} images to {args.out} (e.g. {scenes['train'][0].caption!r})")
    return 0


def png_paths(out: str, count: int) -> list[Path]:
    """Where the attention strips of `count` images go: OUT itself for one image, OUT-1.png .. otherwise."""
    path = Path(out)
    if path.is_dir():
        raise AttnkitError(f"{out}: is a directory, expected a .png file path")
    return [path] if count == 1 else [path.with_name(f"{path.stem}-{i}{path.suffix or '.png'}") for i in range(1, count + 1)]


def cmd_caption(args: argparse.Namespace) -> int:
    loaded = load_run(args.run, args.family, args.checkpoint)
    decode = loaded.run.decode.with_overrides(beam=args.beam, alpha=args.alpha)
    decode = decode.with_overrides(nbest=args.nbest or 1)
    results = caption_images(loaded, args.images, decode, batch_size=args.batch_size)
    if args.out:
        size = loaded.run.model.input_size
        for image, result, out in zip(args.images, results, png_paths(args.out, len(results))):
            attention_strip(out, resize_for_encoder(open_image(image), size), result.words, result.attention, result.grid, title=result.caption)
    for image, r in zip(args.images, results):
        if args.jsonl:
            print(json.dumps({"image": image, "caption": r.caption, "score": r.score, "words": r.words, "grid": r.grid,
                              "attention": r.attention, "nbest": [{"caption": c, "score": s} for c, s in r.nbest]}))  # fmt: skip
        elif args.nbest:
            for caption, score in r.nbest:
                print(f"{image}\t{score:.4f}\t{caption}")
        else:
            print(f"{image}\t{r.caption}")
    return 0


def add_evaluate_arguments(parser: argparse.ArgumentParser) -> list[str]:
    """`attnkit evaluate` options of captioners; returns their names."""
    add_once(parser, "--images", help="captioners: the folder or zip of the images to caption")
    add_once(
        parser,
        "--captions",
        help="captioners: their reference captions (IMAGE<TAB>caption or Flickr8k token file, TSV, JSONL, or a Karpathy .json: its test split)",
    )
    add_once(parser, "--beam", type=positive_int, help="beam size (1 = greedy; default: the run's decode.beam)")
    add_once(parser, "--alpha", type=float, help="length penalty alpha (default: the run's decode.alpha)")
    return ["images", "captions", "beam", "alpha"]


def evaluate(args: argparse.Namespace, load: Callable[[], LoadedRun]) -> dict:
    """Caption every image of --images with the run's decoding settings and score against --captions."""
    if not args.images or not args.captions:
        raise AttnkitError(f"{args.run}: a captioner: evaluate it with --images DIR_OR_ZIP --captions FILE")
    extras.require(f"attnkit evaluate ({FEATURE})", "pycocoevalcap")  # before loading and captioning
    loaded = load()
    d = loaded.run.data
    captioned, source = read_captioned_images(
        args.captions, args.images, image_column=d.image_column, caption_column=d.caption_column, split="test", shared=True
    )
    decode = loaded.run.decode.with_overrides(beam=args.beam, alpha=args.alpha, nbest=1)
    with counter(len(captioned), "evaluating", unit="img") as bar:
        results = caption_images(loaded, [source.read_bytes(c.image) for c in captioned], decode, names=[c.image for c in captioned], progress=bar.update)
    scores = coco_scores([r.caption for r in results], [list(c.captions) for c in captioned])
    return {"run": str(args.run), "beam": decode.beam, "alpha": decode.alpha, **scores}
