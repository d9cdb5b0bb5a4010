"""The optional packages the analysis methods need, imported on first use."""

from __future__ import annotations

import importlib
from types import ModuleType

from attnkit.errors import AttnkitError


def require(module: str, extra: str = "analysis") -> ModuleType:
    """Import `module`, or raise one line naming the pip command that installs it.

    Args:
        module: the import name (`networkx`, `captum.attr`).
        extra: the attnkit extra that lists the package.

    Raises:
        AttnkitError: the package is not installed.
    """
    try:
        return importlib.import_module(module)
    except ImportError:
        package = module.split(".")[0]
        raise AttnkitError(f"{package} is not installed: pip install 'attnkit[{extra}]'") from None
