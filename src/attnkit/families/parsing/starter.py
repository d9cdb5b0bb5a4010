"""`attnkit init parsing`: a commented config for one's own bracketed trees (docs/your-data.md).

The files hold PTB-style trees, one a line or spread over lines (`trees.parse_trees`); they are read
here as training reads them, so a bad tree is one line naming the file, the tree and its line before
any config is written.
"""

from __future__ import annotations

import argparse
import json

from attnkit.config.own_data import OwnData, own_data_defaults
from attnkit.errors import DataError
from attnkit.families.parsing.linear import linearise
from attnkit.families.parsing.trees import read_tree_file
from attnkit.families.protocol import Starter

MAX_TOKENS, WARMUP = 2500, 500  # the base model's batch and warm-up (own_data_defaults may lower both)
MODELS = {  # by `OwnData.size`
    "small": "layers: 2\n  d_model: 128\n  n_heads: 4\n  d_ff: 512",
    "base": "layers: 3\n  d_model: 256\n  n_heads: 4\n  d_ff: 1024",
}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Parsing needs no options beyond --train and --valid."""


def config(args: argparse.Namespace) -> tuple[str, OwnData]:
    if len(args.train or ()) != 1 or len(args.valid or ()) != 1:
        raise DataError("--train and --valid: one file of bracketed trees each")
    trees, valid = read_tree_file(args.train[0]), read_tree_file(args.valid[0])
    counts = [len(trees), len(valid)]
    rule = own_data_defaults(len(trees), sum(len(linearise(tree)[1]) for tree in trees), MAX_TOKENS)  # the target is the longer side
    return (
        f"""# Constituency parsing on your own trees, written by `attnkit init parsing` (docs/your-data.md).
# attnkit train THIS.yaml --out runs/parsing
# then: attnkit parse runs/parsing --input FILE, attnkit plot runs/parsing "a sentence" --view heatmap --out attention.png,
#       attnkit evaluate runs/parsing --trees TEST_TREES
task: parsing
data:
  # bracketed PTB-style trees, e.g. (S (NP (DT the) (NN dog)) (VP (VBZ runs))), one a line (or over several lines)
  train: {json.dumps(args.train[0])}   # {counts[0]:,} trees
  valid: {json.dumps(args.valid[0])}   # {counts[1]:,} trees, scored with EVALB F1
  leaves: placeholder  # the target writes each word as XX (Vinyals et al. 2015); words: the words themselves
  max_len: 100         # training trees of more words are left out
  min_freq: 2          # rarer training words are unknown words...
  unknown: signature   # ...read by their shape and suffix
model:
  kind: transformer    # Vaswani et al. (2017), sec. 6.3, small; kind: chart is the chart parser (docs/parse.md)
  # the {rule.size} model: {counts[0]:,} training trees (own-data defaults, docs/your-data.md)
  {MODELS[rule.size]}
  dropout: 0.3
  norm: pre
  pointer: true        # the decoder sees the encoder state of the next word to write
  tagger: true         # also predict POS tags
train:
  schedule: {{kind: inverse_sqrt, lr: 0.0007, warmup: {rule.warmup(WARMUP)}}}
  label_smoothing: 0.1
{rule.train_yaml()}  keep_last: 3
decode:
  beam: 5
  alpha: 0.3
  max_len_a: 1.0
  max_len_b: 300
""",
        rule,
    )


STARTER = Starter(
    add_arguments=add_arguments,
    config=config,
    files="one file of bracketed trees, one a line",
    example="attnkit init parsing --train examples/parsing/train.txt --valid examples/parsing/valid.txt --out my.yaml",
)
