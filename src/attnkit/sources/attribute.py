"""Attributions of one output over the input tokens, for the record (`--attribute`).

The source gives the score f of an embedded input ((N, T, D) -> (N,): a class's logit, a token's
log-probability), the input's embeddings (T, D) and what f scores: a Hugging Face model through
`sources.hf.attribute`, an attnkit run through its family's `Family.attribution`. Each method of
`attnkit.analysis.attribution` gives (T,) scores (summed over each word's pieces with `groups`);
integrated gradients adds its steps and relative error (the completeness check). With the `Collector`
that kept the rows of attention the output reads, the record's `OutputAttribution` also holds the row (when
the output reads one) and the agreement of each row with the scores (`sources.agreement`). The npz
(`sources.npz.write_record`) and the page (`viz.records.attribution_json`) write it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch
from torch import Tensor

from attnkit.sources.collect import Collector
from attnkit.viz.attention_view import OutputAttribution


def attribution(f: Callable[[Tensor], Tensor], x: Tensor, label: str, methods: Sequence[str], tokens: Sequence[str],
                groups: Sequence[Sequence[int]] | None = None, collector: Collector | None = None) -> OutputAttribution:  # fmt: skip
    """Each method's attributions of f at `x` (T, D) over `tokens` (and their agreement with the collector's rows)."""
    from attnkit.analysis.attribution import input_x_gradient, integrated_gradients
    from attnkit.sources.agreement import taus

    ig, scores = None, {}
    for method in methods:
        if method == "ixg":
            s = input_x_gradient(f, x).scores  # (T,)
        else:
            a = integrated_gradients(f, x)
            s, ig = a.scores, {"steps": a.steps, "relative_error": a.relative_error}  # (T,)
        s = s if groups is None else torch.stack([s[g].sum() for g in groups])  # (T,) or (W,)
        scores[method] = s.detach().float().cpu()
    out = OutputAttribution(label, None, list(tokens), {m: s.numpy() for m, s in scores.items()}, ig)
    if collector is not None and collector.output is not None:
        out.row = collector.output[1]
        if collector.compared:
            out.compared = {name: row.float().numpy() for name, row in collector.compared.items()}
            out.tau = {m: taus(collector.compared, s) for m, s in scores.items()}
    return out
