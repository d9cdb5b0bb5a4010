"""`attnkit init captioning`: a commented config for one's own captioned images (docs/your-data.md).

One folder (or zip) of images, `--images`, and either one Karpathy split file for every split
(`--captions dataset_coco.json`) or a caption file per split (`--train`, `--valid`: ``IMAGE<TAB>
caption``, Flickr8k tokens, TSV or JSONL, `captions`). Both splits are read and checked against
the folder here, as training reads them, so a caption whose image is not there is one line naming
the file and the line before any config is written.
"""

from __future__ import annotations

import argparse
import json

from attnkit.config.own_data import OwnData, own_data_defaults
from attnkit.errors import DataError
from attnkit.families.captioning.captions import read_captioned_images
from attnkit.families.protocol import Starter

RARE_FROM = 5000  # training captions from which words seen fewer than 5 times become <unk>
MAX_TOKENS, MAX_SENTENCES = 2000, 32  # the base model's batch (own_data_defaults may lower the tokens)
MODELS = {  # by `OwnData.size`: the decoder's widths
    "small": "embed_dim: 128\n  hidden_dim: 256\n  attn_dim: 128",
    "base": "embed_dim: 256\n  hidden_dim: 384\n  attn_dim: 256",
}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--images", required=True, metavar="DIR", help="the folder (or zip) of the images of every split")
    parser.add_argument("--captions", metavar="FILE", help="a Karpathy split file (dataset_coco.json style) for every split, instead of --train/--valid")
    parser.add_argument("--image-column", default="image", help="TSV/JSONL caption files: the image column (default: image)")
    parser.add_argument("--caption-column", default="caption", help="TSV/JSONL caption files: the caption column (default: caption)")


def _caption_files(args: argparse.Namespace) -> dict[str, str]:
    if args.captions and not (args.train or args.valid):
        return {"train": args.captions, "valid": args.captions}
    if args.captions or not args.train or not args.valid or len(args.train) != 1 or len(args.valid) != 1:
        raise DataError("captions: give --captions dataset.json (a Karpathy split file), or one caption file each with --train and --valid")
    return {"train": args.train[0], "valid": args.valid[0]}


def config(args: argparse.Namespace) -> tuple[str, OwnData]:
    files = _caption_files(args)
    counts, words = {}, 0
    for split, path in files.items():
        captioned, _ = read_captioned_images(path, args.images, image_column=args.image_column, caption_column=args.caption_column, split=split, shared=True)
        counts[split] = (len(captioned), sum(len(c.captions) for c in captioned))
        words = words or sum(len(caption.split()) for c in captioned for caption in c.captions)  # the training split's, read first
    rule = own_data_defaults(counts["train"][1], words, MAX_TOKENS, MAX_SENTENCES, items=counts["train"][0])  # a batch item: an image with its captions
    captions = (
        f"  captions: {json.dumps(args.captions)}   # a Karpathy split file: its train and restval images train, its val images validate\n"
        if args.captions
        else f"  train_captions: {json.dumps(files['train'])}\n  valid_captions: {json.dumps(files['valid'])}\n"
    )
    named = (args.image_column, args.caption_column) != ("image", "caption")
    columns = f"  image_column: {json.dumps(args.image_column)}\n  caption_column: {json.dumps(args.caption_column)}\n" if named else ""
    return (
        f"""# Image captioning on your own images, written by `attnkit init captioning` (docs/your-data.md).
# attnkit train THIS.yaml --out runs/captioning
# then: attnkit caption runs/captioning IMAGE..., attnkit plot runs/captioning IMAGE --view heatmap --out attention.png
data:
  images: {json.dumps(args.images)}   # the folder (or zip) of every split's images
{captions}{columns}  # training: {counts["train"][0]} images, {counts["train"][1]} captions; validation: {counts["valid"][0]} images, {counts["valid"][1]} captions
  min_freq: {5 if counts["train"][1] >= RARE_FROM else 1}   # words seen fewer times in the training captions become <unk>
  max_len: 22        # longer training captions are cut to this many words
model:
  kind: show_attend_tell  # Show, Attend and Tell (Xu et al. 2015), soft attention over the image grid
  encoder: lite0     # EfficientNet-Lite0 ImageNet weights, frozen (without them: small_cnn, trained from scratch)
  input_size: 224
  feature_dim: 384
  # the {rule.size} decoder: {counts["train"][1]:,} training captions (own-data defaults, docs/your-data.md)
  {MODELS[rule.size]}
  dropout: 0.5
  lambda: 1.0        # the doubly stochastic attention penalty
train:
  max_sentences: {MAX_SENTENCES}
  betas: [0.9, 0.999]
  eps: 1.0e-8
  schedule: {{kind: constant, lr: 0.001}}
  label_smoothing: 0.0
  clip_norm: 5.0
{rule.train_yaml()}  keep_last: 3
decode:
  beam: 3
  alpha: 0.0
  max_len_a: 0
  max_len_b: 23
""",
        rule,
    )


STARTER = Starter(
    add_arguments=add_arguments,
    config=config,
    files="one captions file (IMAGE<TAB>caption, Flickr8k tokens, .tsv or .jsonl); or --captions instead",
    example="attnkit init captioning --images examples/captioning/images --captions examples/captioning/dataset.json --out my.yaml",
)
