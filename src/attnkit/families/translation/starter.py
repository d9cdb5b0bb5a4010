"""`attnkit init translation`: a commented config for one's own parallel text (docs/your-data.md).

Each split is two line-aligned text files (`--train a.en a.de`) or one table file (`--train
pairs.tsv`: .tsv/.csv with a header, .jsonl or .json, columns `--src-column`/`--tgt-column`). The
files are checked here, as `attnkit train` checks them, so a bad one is one line naming the file
and the line before any config is written.
"""

from __future__ import annotations

import argparse
import json

from attnkit.config.own_data import OwnData, longer_side_tokens, own_data_defaults
from attnkit.data.tables import table_kind
from attnkit.data.text import read_parallel
from attnkit.errors import DataError
from attnkit.families.protocol import Starter
from attnkit.families.translation.data.check import check_parallel
from attnkit.families.translation.data.corpus import Table

SUBWORDS_FROM = 10_000  # training pairs from which SentencePiece BPE beats whole words
MAX_TOKENS, WARMUP = 4096, 600  # the base model's batch and warm-up (own_data_defaults may lower both)
MODELS = {  # by `OwnData.size`
    "small": "layers: 2\n  d_model: 128\n  n_heads: 4\n  d_ff: 512",
    "base": "layers: 3\n  d_model: 256\n  n_heads: 4\n  d_ff: 1024",
}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--src-column", default="src", help="a table file's source column (default: src)")
    parser.add_argument("--tgt-column", default="tgt", help="a table file's target column (default: tgt)")


def _split(files: list[str], option: str, args: argparse.Namespace) -> tuple[str, list[tuple[str, str]]]:
    """The YAML value of one split and its pairs (a bad file: `DataError`)."""
    files = files or []
    if len(files) == 2:
        report = check_parallel(*files, policy={"blank": "fail"})
        if report.failed:
            raise DataError(report.first_failure())
        return f"{{src: {json.dumps(files[0])}, tgt: {json.dumps(files[1])}}}", read_parallel(*files)
    if len(files) == 1 and table_kind(files[0]):
        return json.dumps(files[0]), Table(files[0], args.src_column, args.tgt_column).pairs()
    raise DataError(f"{' '.join([option, *files])}: give two line-aligned text files (source, target) or one .tsv/.csv/.jsonl/.json table")


def config(args: argparse.Namespace) -> tuple[str, OwnData]:
    train, train_pairs = _split(args.train, "--train", args)
    valid, _ = _split(args.valid, "--valid", args)
    pairs = len(train_pairs)
    rule = own_data_defaults(pairs, longer_side_tokens(train_pairs), MAX_TOKENS)
    tokenizer = "bpe" if pairs >= SUBWORDS_FROM else "word"
    columns = (
        ""
        if (args.src_column, args.tgt_column) == ("src", "tgt")
        else f"  src_column: {json.dumps(args.src_column)}\n  tgt_column: {json.dumps(args.tgt_column)}\n"
    )
    return (
        f"""# Translation on your own files, written by `attnkit init translation` (docs/your-data.md).
# attnkit train THIS.yaml --out runs/translation
# then: attnkit translate runs/translation --input FILE, attnkit plot runs/translation "a sentence" --view heatmap --out attention.png
data:
  corpus: files
  # each split: {{src: FILE, tgt: FILE}} (line i of src translates line i of tgt; plain or .gz, UTF-8),
  # or one table FILE (.tsv/.csv with a header, .jsonl or .json) read from src_column and tgt_column
  train: {train}
  valid: {valid}
{columns}  tokenizer: {tokenizer}   # {pairs:,} training pairs; bpe (SentencePiece subwords) from about {SUBWORDS_FROM:,}, word (whole words) below
  vocab_size: 8000   # at most this many tokens, the specials included
  joint: true        # one vocabulary for both languages
  max_len: 128       # training pairs with a longer side (in tokens) are left out
  check:
    blank: fail      # an empty side stops training, naming its file and line (skip: leave such pairs out)
model:
  kind: transformer  # or rnn (attention: bahdanau or luong), docs/training.md
  # the {rule.size} model: {pairs:,} training pairs (own-data defaults, docs/your-data.md)
  {MODELS[rule.size]}
  dropout: 0.3
train:
  schedule: {{kind: inverse_sqrt, lr: 0.001, warmup: {rule.warmup(WARMUP)}}}
  label_smoothing: 0.1
{rule.train_yaml()}  keep_last: 3
decode:
  beam: 5
  alpha: 0.6
""",
        rule,
    )


STARTER = Starter(
    add_arguments=add_arguments,
    config=config,
    files="two line-aligned text files (source, target), or one .tsv/.csv/.jsonl/.json table with src and tgt columns",
    example="attnkit init translation --train examples/translation/train.en examples/translation/train.de "
    "--valid examples/translation/valid.en examples/translation/valid.de --out my.yaml",
)
