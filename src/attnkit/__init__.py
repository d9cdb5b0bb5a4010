"""attnkit: train, decode, evaluate and look inside attention-based sequence models."""

import importlib

from attnkit.errors import AttnkitError, CheckpointError, ConfigError, DataError, TrainingError

__version__ = "0.1.0"

__all__ = ["AttnkitError", "CheckpointError", "ConfigError", "DataError", "TrainingError", "__version__", "show"]


def show(source, text=None, **options):
    """The explorer page of `text` through `source` (a run folder, a Hugging Face model folder or hub
    id), shown inline by Jupyter: see `attnkit.sources.notebook.show` for the options."""
    # Imported by name: the package's top sits below every layer (`from attnkit import __version__`),
    # so a static import here would make every module depend on the explorer (import-linter's layers).
    notebook = importlib.import_module("attnkit.sources.notebook")
    return notebook.show(source, text, **options)
