"""`attnkit init classification`: a commented config for one's own labelled sentences or sentence
pairs (docs/your-data.md).

The files are tables as `datasets.load_dataset("csv"/"json")` reads them (`attnkit.data.tables`).
Without `--text-column`, the header picks the columns: `text` (or `sentence`) for one sentence,
`premise`/`hypothesis` or `sentence1`/`sentence2` for pairs, and `label` (or `gold_label`); then
both files are read as training will read them, so a bad row is one line naming the file and the
line before any config is written.
"""

from __future__ import annotations

import argparse
import json

from attnkit.config.own_data import OwnData, longer_side_tokens, own_data_defaults
from attnkit.data.tables import table_columns
from attnkit.errors import DataError
from attnkit.families.classification.data import read_labelled
from attnkit.families.protocol import Starter

SINGLE = ("text", "sentence")
PAIRS = (("premise", "hypothesis"), ("sentence1", "sentence2"))
LABELS = ("label", "gold_label")
MAX_TOKENS, MAX_SENTENCES = 2000, 64  # the base model's batch (own_data_defaults may lower the tokens)
MODELS = {  # by `OwnData.size`
    "small": "embed_dim: 64\n  u: 64              # bi-LSTM width per direction\n  d_a: 64\n  r: 4               # attention hops: each one is a distribution over the words\n  mlp_hidden: 128",
    "base": "embed_dim: 100\n  u: 100             # bi-LSTM width per direction\n  d_a: 100\n  r: 4               # attention hops: each one is a distribution over the words\n  mlp_hidden: 300",
}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--text-column", help=f"the text (a pair's first sentence) (default: from the header: {', '.join(SINGLE)}, premise, sentence1)")
    parser.add_argument("--text2-column", help="a pair's second sentence (default: from the header: hypothesis, sentence2)")
    parser.add_argument("--label-column", help=f"the label (default: from the header: {', '.join(LABELS)})")


def _columns(path: str, args: argparse.Namespace) -> tuple[str, str | None, str]:
    """(text, text2 or None, label) columns: the ones given, else the first the header has."""
    header = table_columns(path)
    text, text2 = args.text_column, args.text2_column
    if text is None:
        first, second = next(((a, b) for a, b in PAIRS if a in header and b in header), (None, None))
        text = first or next((c for c in SINGLE if c in header), None)
        text2 = text2 or second
    label = args.label_column or next((c for c in LABELS if c in header), None)
    for what, column, option in (("text", text, "--text-column"), ("label", label, "--label-column")):
        if column is None:
            raise DataError(f"{path}, line 1: no {what} column (the columns are {', '.join(header)}); name it with {option}")
    return text, text2, label  # type: ignore[return-value]  # checked above


def config(args: argparse.Namespace) -> tuple[str, OwnData]:
    if len(args.train or ()) != 1 or len(args.valid or ()) != 1:
        raise DataError("--train and --valid: one table file each (.csv, .tsv, .jsonl or .json)")
    train_file, valid_file = args.train[0], args.valid[0]
    text, text2, label = _columns(train_file, args)
    examples, labels = read_labelled(train_file, text_column=text, text2_column=text2, label_column=label)
    read_labelled(valid_file, text_column=text, text2_column=text2, label_column=label, label_map=labels)
    tokens = longer_side_tokens((e.text, e.text2 or "") for e in examples)
    rule = own_data_defaults(len(examples), tokens, MAX_TOKENS, MAX_SENTENCES)
    pair = "factor" if text2 else "none"
    second = f"  text2_column: {json.dumps(text2)}   # the second sentence of each pair\n" if text2 else ""
    return (
        f"""# Sentence classification on your own files, written by `attnkit init classification` (docs/your-data.md).
# attnkit train THIS.yaml --out runs/classification
# then: attnkit classify runs/classification --input FILE, attnkit plot runs/classification "{"a premise<TAB>its hypothesis" if text2 else "a sentence"}" --view hops --out hops.png
data:
  corpus: labelled
  # .csv/.tsv with a header row, .jsonl or .json (plain or .gz), as datasets.load_dataset("csv"/"json") reads them
  train: {json.dumps(train_file)}   # {len(examples)} examples, labels {labels.shown()}
  valid: {json.dumps(valid_file)}
  text_column: {json.dumps(text)}
{second}  label_column: {json.dumps(label)}
  lowercase: true
  min_freq: 1        # words seen fewer times in training become <unk>
model:
  kind: sase         # the self-attentive sentence embedding of Lin et al. (2017)
  # the {rule.size} model: {len(examples):,} training examples (own-data defaults, docs/your-data.md)
  {MODELS[rule.size]}
  coef: 0.1          # weight of the penalty that keeps the hops apart
  dropout: 0.3
  pair: {pair}       # factor or concat: how a pair's two embeddings are combined (none: single sentences)
train:
  max_sentences: {MAX_SENTENCES}
  betas: [0.9, 0.999]
  eps: 1.0e-8
  schedule: {{kind: constant, lr: 0.002}}
  clip_norm: 5.0
{rule.train_yaml()}  keep_last: 1
""",
        rule,
    )


STARTER = Starter(
    add_arguments=add_arguments,
    config=config,
    files="one .csv/.tsv/.jsonl/.json table with a header: text (or a pair) and label columns",
    example="attnkit init classification --train examples/classification/train.csv --valid examples/classification/valid.csv --out my.yaml",
)
