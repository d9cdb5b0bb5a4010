"""The training defaults of a config for one's own files (`attnkit init FAMILY`, `attnkit train FAMILY
--train ...`): one rule, from the size of the training data, for every family (docs/your-data.md,
"How long it trains").

- **Model**: the family's small model below `SMALL_BELOW` training examples, its base model from there.
- **Batch**: the family's token budget, lowered so that an epoch is at least `MIN_UPDATES_PER_EPOCH`
  updates (never below `MIN_BATCH_TOKENS`): a few hundred sentences still make a few hundred updates.
- **Evaluation**: once an epoch, and at least every `EVAL_TOKENS` training tokens (2,260 target tokens
  a second for a 3-layer, 256-wide Transformer in fp32 on 2 threads, benchmarks/results/train_tps_cpu.jsonl:
  200,000 tokens take 89 s). The first one comes earlier, after at most `FIRST_EVAL_TOKENS` (22 s at
  that speed), so that the first checkpoint lands within two minutes on an idle 2-core machine even
  after the work before the first update: a tokenizer to train, image features to compute
  (benchmarks/own_data_first_checkpoint.py measures it for each family).
- **Budget**: the smaller of `MAX_EPOCHS` epochs and `MAX_MINUTES` minutes; the warm-up of a schedule
  that has one at most a tenth of the epoch budget's updates.
- **Early stopping**: on the validation loss (it falls from the first update, where BLEU or F1 can sit
  at 0 for several evaluations), after `PATIENCE` evaluations without a lower one.

Tokens are counted as whitespace words of the longer side (a batch's budget holds for each side), so
the number of updates an epoch is an estimate (padding and subwords add a little). Every value is an
ordinary config key: `--set` or an edited config overrides it.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

SMALL_BELOW = 10_000  # training examples from which the family's base model is worth its cost
MIN_UPDATES_PER_EPOCH = 50
MIN_BATCH_TOKENS = 256
EVAL_TOKENS = 200_000
FIRST_EVAL_TOKENS = 50_000
MAX_EPOCHS = 50
MAX_MINUTES = 30
PATIENCE = 5
WARMUP_SHARE = 10  # warm-up: at most 1/WARMUP_SHARE of the epoch budget's updates


@dataclass(frozen=True)
class OwnData:
    """What the rule sets for `examples` training examples of `tokens` tokens (`own_data_defaults`)."""

    examples: int
    tokens: int
    size: Literal["small", "base"]
    max_tokens: int  # the batch's token budget
    updates_per_epoch: int  # estimated
    eval_every: int
    eval_first: int  # the first evaluation's update (at most `eval_every`)

    def warmup(self, family_warmup: int) -> int:
        """The warm-up of a schedule whose family default is `family_warmup` updates."""
        return max(1, min(family_warmup, MAX_EPOCHS * self.updates_per_epoch // WARMUP_SHARE))

    def train_yaml(self) -> str:
        """The `train:` keys the rule sets, commented, indented for the section."""
        return f"""  max_tokens: {self.max_tokens}   # tokens per batch: about {_updates(self.updates_per_epoch)} an epoch ({self.tokens:,} tokens)
  max_epochs: {MAX_EPOCHS}     # stop after {MAX_EPOCHS} epochs or {MAX_MINUTES} minutes, whichever comes first
  max_minutes: {MAX_MINUTES}
  eval_every: {self.eval_every}   # validate and save a checkpoint every N updates: once an epoch, at most {EVAL_TOKENS:,} tokens apart
  eval_first: {self.eval_first}   # and the first time after this many updates (at most {FIRST_EVAL_TOKENS:,} tokens)
  early_stopping: loss
  patience: {PATIENCE}       # stop after {PATIENCE} evaluations without a lower validation loss
"""

    def summary(self) -> str:
        """The rule and what it gives for these data, in one line (printed when a run or config starts)."""
        return (
            f"own-data defaults (docs/your-data.md) for {self.examples:,} training examples, {self.tokens:,} tokens: "
            f"the {self.size} model ({'below' if self.size == 'small' else 'from'} {SMALL_BELOW:,} examples); "
            f"batches of {self.max_tokens:,} tokens, about {_updates(self.updates_per_epoch)} an epoch; "
            f"evaluate every {_updates(self.eval_every)} (once an epoch, at most {EVAL_TOKENS:,} tokens apart), "
            f"first after {_updates(self.eval_first)} (at most {FIRST_EVAL_TOKENS:,} tokens); "
            f"stop after {MAX_EPOCHS} epochs or {MAX_MINUTES} minutes, or {PATIENCE} evaluations without a lower validation loss"
        )


def _updates(n: int) -> str:
    return f"{n:,} update{'' if n == 1 else 's'}"


def own_data_defaults(examples: int, tokens: int, family_max_tokens: int, max_sentences: int | None = None, items: int | None = None) -> OwnData:
    """The rule for `examples` training examples of `tokens` tokens (the longer side's whitespace words),
    for a family whose batches hold `family_max_tokens` tokens and at most `max_sentences` items: the
    examples, or `items` of them when one item holds several (captioning: an image with its captions)."""
    max_tokens = min(family_max_tokens, max(MIN_BATCH_TOKENS, tokens // MIN_UPDATES_PER_EPOCH))
    by_items = math.ceil((examples if items is None else items) / max_sentences) if max_sentences else 1
    per_epoch = max(1, math.ceil(tokens / max_tokens), by_items)
    eval_every = min(per_epoch, math.ceil(EVAL_TOKENS / max_tokens))
    eval_first = min(eval_every, math.ceil(FIRST_EVAL_TOKENS / max_tokens))
    return OwnData(examples, tokens, "small" if examples < SMALL_BELOW else "base", max_tokens, per_epoch, eval_every, eval_first)


def longer_side_tokens(rows: Iterable[Sequence[str]]) -> int:
    """The whitespace words of the longer side (column) of `rows`: a pair's source or target, a sentence pair's first or second."""
    totals: list[int] = []
    for row in rows:
        totals = [a + len(text.split()) for a, text in zip(totals or [0] * len(row), row)]
    return max(totals, default=0)
