"""Errors that attnkit reports to a user as one line.

Library code raises these with a message that names *what* went wrong and *where* (file, line,
key path). Only `attnkit.cli` catches them and prints the message; nothing else prints.
"""


class AttnkitError(Exception):
    """Base class: a problem the user can fix, reported as one line without a traceback."""


class ConfigError(AttnkitError):
    """A config file or `--set` override is invalid (names file, key path and what was expected)."""


class DataError(AttnkitError):
    """An input data file is missing, unreadable, malformed or inconsistent (names file and line)."""


class TooManyTokens(DataError):
    """An input longer than a model's positions. The message ends in `HINT`, the option that cuts it on the
    command line; `served` is the message without it, for serve's answers (its requests have no such option)."""

    HINT = " (--truncate cuts it)"

    @property
    def served(self) -> str:
        return str(self).removesuffix(self.HINT)


class CheckpointError(AttnkitError):
    """A run folder or checkpoint is missing, corrupt, or does not match its config/vocabulary."""


class TrainingError(AttnkitError):
    """Training cannot go on (e.g. the loss was NaN or inf too many steps in a row)."""


class RunInUseError(AttnkitError):
    """Another process holds the run folder (names the folder and that process: pid, host, start time)."""


class WriteError(AttnkitError):
    """A file could not be written: disk full (ENOSPC, EDQUOT), read-only (EROFS) or not permitted (EACCES)."""


class MissingExtra(AttnkitError):
    """A command needs an optional package that is not installed (names it and the pip command; `attnkit.extras`)."""
