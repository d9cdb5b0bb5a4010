"""Does attention agree with the attributions of one output? Kendall's tau-b, per layer, of rollout and of flow.

The attributed output is read at one query row of one kind (`Collector.output`): a classifier's
first token ([CLS], `<s>`: what BERT-style heads pool), a language model's last position (it
predicts the next token), an encoder-decoder model's output position t in its cross attention.
The collector keeps that row of each layer (head mean), of `rollout` and of `flow`; here each is
ranked against |attributions| (the magnitude: attention has no sign), as the benchmarks and tour
page 8 do, with `analysis.correlation.kendall_tau` (`OutputAttribution.compared` and `.tau`). The npz (and the page) get:

- `tau/names` (K,): `<kind>/layer<l>` per layer, then `rollout` and, with `--flow`, `flow`;
- `tau/rows` (K, S) float32: those rows, what was ranked;
- `tau/<method>` (K,) float64: tau-b between row k and |`attr/<method>`| (NaN where either is constant).
"""

from __future__ import annotations

import numpy as np
from torch import Tensor

from attnkit.analysis.correlation import kendall_tau


def taus(compared: dict[str, Tensor], scores: Tensor) -> np.ndarray:
    """Kendall's tau-b of each compared row (S,) with |scores| (S,): (K,) float64."""
    return np.array([kendall_tau(row, scores.abs()) for row in compared.values()], dtype=np.float64)
