"""Teacher-forced training shared by the encoder-decoder families: the summed label-smoothed loss of
a batch's target tokens, and the validation-loss loop over a held-out split.

A family computes its decoder features its own way (an RNN's scheduled sampling, a parser's tagger
loss added) and hands them to `token_loss`; `validation_loss` sums what the family's loss returns over
a split with the loop every family shares (`families/validation.py`).
"""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn.functional as F

from attnkit.config.schema import Train
from attnkit.data.batching import Batch, Example, sequence_lengths
from attnkit.data.vocab import PAD
from attnkit.evaluate.metrics import perplexity
from attnkit.families.validation import validation_sums
from attnkit.models.losses import label_smoothed_nll


def token_loss(
    features: torch.Tensor, batch: Batch, weight: torch.Tensor, epsilon: float, bias: torch.Tensor | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """Summed label-smoothed loss and NLL of teacher-forced decoder `features` (B, T, D) against
    `batch.tgt_out`, through the output projection `weight` (V, D) and a fixed logit `bias` (V,) if the
    model has one (imported Marian models); padding positions are never projected."""
    keep = batch.tgt_out != PAD  # (B, T)
    if bias is None:  # the fused projection + loss (models/losses.py)
        return label_smoothed_nll(features[keep], batch.tgt_out[keep], weight=weight, epsilon=epsilon, ignore_index=PAD)
    logits = F.linear(features[keep], weight.to(features.dtype), bias.to(features.dtype))  # (N, V)
    return label_smoothed_nll(logits, batch.tgt_out[keep], epsilon=epsilon, ignore_index=PAD)


def validation_loss(
    examples: list[Example], collate: Callable[[list[int]], Batch], loss: Callable[[Batch], tuple[torch.Tensor, torch.Tensor]],
    train: Train, device: torch.device,
) -> dict[str, float]:  # fmt: skip
    """The mean loss per target token ("loss") and the perplexity ("ppl") of `examples`.

    `collate(index)` pads the examples `index` into a batch; `loss(batch)` returns its summed
    (loss, NLL). Batches as in training, in length order, under the run's precision (`validation_sums`).
    """
    sums = validation_sums(sequence_lengths(examples), collate, loss, lambda batch, out: {"loss": out[0], "nll": out[1], "tokens": batch.n_tgt_tokens},
                           train, device)  # fmt: skip
    return {"loss": sums["loss"] / sums["tokens"], "ppl": perplexity(sums["nll"], sums["tokens"])}
