"""A map's weights as bytes, the way pages hold them: weight ~= byte / 255 * scale, one scale per map.

So that a page of a 2,048-token input stays a file a browser opens, a page holds each (layer, head)
map as bytes: the weights divided by the map's largest weight, times 255, rounded (`scale` keeps
that largest weight; the views draw every map on its own scale anyway), base64 in the JSON
(`packed`). `AttnDraw.source` (viz/templates/attention-views.js) decodes it.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass

import numpy as np


@dataclass
class Quantized:
    """Maps (..., Tq, Tk) as bytes: weight ~= data / 255 * scale, one scale per map (its largest weight)."""

    data: np.ndarray  # uint8 (..., Tq, Tk)
    scale: np.ndarray  # float (...)


def quantize(weights: np.ndarray) -> Quantized:
    """Each (Tq, Tk) map of `weights` (..., Tq, Tk) to bytes on its own scale."""
    scale = np.asarray(weights.max(axis=(-2, -1), initial=0.0), dtype=np.float64)  # (...): 0 for an empty map
    scale[scale <= 0] = 1.0
    data = np.rint(weights / scale[..., None, None] * 255).clip(0, 255).astype(np.uint8)  # (..., Tq, Tk)
    return Quantized(data, scale)


def dequantize(q: Quantized) -> np.ndarray:
    """The weights (..., Tq, Tk) float32 that `q` stands for (to within half a step of its scale)."""
    return (q.data.astype(np.float32) / 255 * q.scale[..., None, None]).astype(np.float32)


def packed(layers: list[Quantized]) -> dict:
    """(L, H, Tq, Tk) bytes -> the page's `scale` [L][H] and `data` [L][H] (base64)."""
    data = [[base64.b64encode(m.tobytes()).decode("ascii") for m in q.data] for q in layers]
    return {"scale": [q.scale.tolist() for q in layers], "data": data}
