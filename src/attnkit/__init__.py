"""attnkit: train, decode, evaluate and look inside attention-based sequence models."""

from attnkit.errors import AttnkitError, CheckpointError, ConfigError, DataError, TrainingError

__version__ = "0.1.0"

__all__ = ["AttnkitError", "CheckpointError", "ConfigError", "DataError", "TrainingError", "__version__"]
