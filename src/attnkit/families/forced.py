"""Teacher-forced training shared by the encoder-decoder families: the summed label-smoothed loss of
a batch's target tokens, and the validation-loss loop over a held-out split.

A family computes its decoder features its own way (an RNN's scheduled sampling, a parser's tagger
loss added) and hands them to `token_loss`; `validation_loss` batches a split by length exactly as
training does and sums what the family's loss returns.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn.functional as F

from attnkit.config.schema import Train
from attnkit.data.batching import Batch, Example, TokenBatcher, sequence_lengths
from attnkit.data.vocab import PAD
from attnkit.evaluate.metrics import perplexity
from attnkit.models.losses import label_smoothed_nll
from attnkit.precision import autocast


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
    (loss, NLL). Batches hold `train.max_tokens`, in length order, under the run's precision.
    """
    batcher = TokenBatcher(*sequence_lengths(examples), max_tokens=train.max_tokens, shuffle=False, seed=0)
    loss_sum = nll_sum = n_tokens = 0.0
    for index in batcher.epoch(0):
        batch = collate(index).to(device)
        with autocast(device, train.precision):
            batch_loss, nll = loss(batch)
        loss_sum, nll_sum, n_tokens = loss_sum + batch_loss.item(), nll_sum + nll.item(), n_tokens + batch.n_tgt_tokens
    return {"loss": loss_sum / n_tokens, "ppl": perplexity(nll_sum, n_tokens)}
