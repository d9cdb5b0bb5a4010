"""attnkit: train, decode, evaluate and look inside attention-based sequence models."""

from attnkit.errors import AttnkitError, CheckpointError, ConfigError, DataError, TrainingError
from attnkit.version import __version__

__all__ = ["AttnkitError", "CheckpointError", "ConfigError", "DataError", "TrainingError", "__version__", "show"]


def __getattr__(name: str):
    """`attnkit.show` (`attnkit.sources.notebook.show`), imported on first use (PEP 562), so that
    `import attnkit` stays light; every module inside the package imports from `attnkit.version`
    and `attnkit.errors`, never from the package's top, which sits above every layer."""
    if name == "show":
        from attnkit.sources.notebook import show

        return show
    raise AttributeError(f"module 'attnkit' has no attribute {name!r}")
