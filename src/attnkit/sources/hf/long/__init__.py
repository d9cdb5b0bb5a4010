"""Attention at length: look inside long-context decoders and encoders without eager kernels or N x N maps in memory.

The model keeps its own attention kernel (SDPA); `capture` registers an attention implementation
with transformers that keeps each layer's post-rotary queries and keys (keys at the key/value head
count), and `blocks` recomputes exact attention rows from them, a block of queries at a time. From
the same blocks, one pass per layer (`scan`) gives the per-query `summaries` (sink, entropy,
distance, local mass), the `pooling` maps at several zoom levels (with and without the sink's
column) and a step of `rollout` for chosen rows. `budget` estimates memory and disk before any work
and refuses, in one line, what does not fit (the kept queries and keys go to disk, `spill`, before it refuses); `options` holds the settings and `export` writes the
npz (`attnkit attention SOURCE --long`, docs/explorer.md, "Long inputs").
"""

from __future__ import annotations

from attnkit.sources.hf.long.export import export_long
from attnkit.sources.hf.long.options import LongOptions

__all__ = ["LongOptions", "export_long"]
