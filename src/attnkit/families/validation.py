"""The validation loop every family's `Task.validate` shares (the families declare it; the training
loop only calls `validate`).

A held-out split is cut into batches as training cuts its data (`TokenBatcher` by length, within
`train.max_tokens` and `train.max_sentences`, in sorted order); each batch's `forward` runs under the
run's precision as in training (`train.precision`), and `measure` turns what it returned into sums
(a loss summed over the batch, a token count), outside autocast, which the loop adds up over the
split. The family divides the sums into its metrics and adds what needs decoding (BLEU, F1).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import torch

from attnkit.config.schema import Train
from attnkit.data.batching import TokenBatcher
from attnkit.precision import autocast
from attnkit.progress import counter


def validation_sums(
    lengths: tuple[Sequence[int], Sequence[int]],
    collate: Callable[[list[int]], Any],
    forward: Callable[[Any], Any],
    measure: Callable[[Any, Any], Mapping[str, float | torch.Tensor]],
    train: Train,
    device: torch.device,
) -> dict[str, float]:
    """The sums `measure(batch, forward(batch))` over the split, key by key.

    Args:
        lengths: the split's (source, target) lengths for `TokenBatcher` (as `Task.train_lengths`).
        collate: the examples `index` of the split as a batch with a `.to(device)` method.
        forward: the batch's forward pass (and loss), run under `train.precision`'s autocast.
        measure: (batch, what `forward` returned) -> sums over the batch (floats or 0-dim tensors).
        train: the run's `train` section: the batch budget and the precision.
        device: where the model is.
    """
    batcher = TokenBatcher(*lengths, max_tokens=train.max_tokens, max_sentences=train.max_sentences, shuffle=False, seed=0)
    sums: dict[str, float] = {}
    with counter(len(lengths[0]), "validation loss", unit="ex") as bar:
        for index in batcher.epoch(0):
            batch = collate(index).to(device)
            with autocast(device, train.precision):
                out = forward(batch)
            for key, value in measure(batch, out).items():
                sums[key] = sums.get(key, 0.0) + float(value)
            bar.update(len(index))
    return sums
