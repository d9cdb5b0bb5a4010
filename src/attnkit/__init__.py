"""attnkit: train, decode, evaluate and look inside attention-based sequence models."""

import os

# oneDNN (PyTorch's CPU bf16 matmuls) caches a compiled primitive per matmul shape, 1,024 by
# default; token batches have hundreds of shapes, and the cache alone took 0.9 GB of a bf16
# M30K-small run. 16 keeps peak memory under fairseq's (benchmarks/train_tps.py; docs/training.md).
# Read by oneDNN when it first runs, so it must be set before any matmul; a user's value wins.
os.environ.setdefault("ONEDNN_PRIMITIVE_CACHE_CAPACITY", "16")

from attnkit.errors import AttnkitError, CheckpointError, ConfigError, DataError, TrainingError  # noqa: E402

__version__ = "0.1.0"

__all__ = ["AttnkitError", "CheckpointError", "ConfigError", "DataError", "TrainingError", "__version__"]
