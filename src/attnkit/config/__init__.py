"""Run configuration: pydantic schema and YAML loading with `--set` overrides."""

from attnkit.config.load import dump_config, load_config, save_config, validate
from attnkit.config.schema import Data, Decode, Run, Train, Transformer

__all__ = ["Data", "Decode", "Run", "Train", "Transformer", "dump_config", "load_config", "save_config", "validate"]
