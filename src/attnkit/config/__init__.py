"""Run configuration: the shared sections (`Train`, `Decode`) and YAML loading with `--set` overrides.

`attnkit.families.load_config` turns a file into the run of the right family.
"""

from attnkit.config.load import dump_config, read_config, read_yaml, save_config, validate
from attnkit.config.schema import Decode, RunBase, Train

__all__ = ["Decode", "RunBase", "Train", "dump_config", "read_config", "read_yaml", "save_config", "validate"]
