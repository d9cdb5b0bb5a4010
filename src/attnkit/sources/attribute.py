"""Attributions of one output over the input tokens, written into the npz (`attnkit attention --attribute`).

The source gives the score f of an embedded input ((N, T, D) -> (N,): a class's logit, a token's
log-probability), the input's embeddings (T, D) and what f scores: a Hugging Face model through
`sources.hf.attribute`, an attnkit run through its family's `Family.attribution`. Each method of
`attnkit.analysis.attribution` writes `attr/<method>` (T,) (summed over each word's pieces with
`groups`), then `attr/output` and, for integrated gradients, `attr/ig_steps` and
`attr/ig_relative_error` (the completeness check). With the `Collector` that kept the rows of
attention the output reads, also `attr/row` (when the output reads one row) and the agreement
`tau/...` (`sources.agreement`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import torch
from torch import Tensor

from attnkit.sources.collect import Collector
from attnkit.sources.npz import NpzWriter


def write_attributions(writer: NpzWriter, f: Callable[[Tensor], Tensor], x: Tensor, label: str, methods: Sequence[str],
                       groups: Sequence[Sequence[int]] | None = None, collector: Collector | None = None) -> dict:  # fmt: skip
    """Write each method's attributions of f at `x` (T, D) (and their agreement); returns the summary's fields."""
    from attnkit.analysis.attribution import input_x_gradient, integrated_gradients
    from attnkit.sources.agreement import write_agreement

    figures, written = {}, {}
    for method in methods:
        if method == "ixg":
            scores = input_x_gradient(f, x).scores  # (T,)
        else:
            a = integrated_gradients(f, x)
            scores, figures = a.scores, {"steps": a.steps, "relative_error": a.relative_error}  # (T,)
        scores = scores if groups is None else torch.stack([scores[g].sum() for g in groups])  # (T,) or (W,)
        written[method] = scores.detach().float().cpu()
        writer.add(f"attr/{method}", written[method].numpy())
    writer.add("attr/output", [label])
    if collector is not None and collector.output is not None:
        if collector.output[1] is not None:
            writer.add("attr/row", np.int64(collector.output[1]))
        write_agreement(writer, collector.compared, written)
    if figures:
        writer.add("attr/ig_steps", torch.tensor(figures["steps"]).numpy())
        writer.add("attr/ig_relative_error", torch.tensor(figures["relative_error"], dtype=torch.float64).numpy())
    return {"attributed": label, **{f"ig_{k}": v for k, v in figures.items()}}
