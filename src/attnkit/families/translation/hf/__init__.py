"""Hugging Face interop: attnkit Transformer runs as MarianMT models and back (docs/deployment.md).

`marian` maps the weights (the same network, written in Marian's order of the position features),
`export` writes a folder that `MarianMTModel` / `MarianTokenizer` / `pipeline("translation")`
load (`attnkit export RUN --format hf`), and `importer` turns a MarianMT folder (OPUS-MT) into an
attnkit run folder (`attnkit import hf SOURCE --out RUN`). `transformers` is optional and imported
only inside these commands: `require` says how to install it, in one line.
"""

from __future__ import annotations

from types import ModuleType

from attnkit.extras import load


def require(package: str = "transformers") -> ModuleType:
    """Import `transformers` (or `huggingface_hub`, which it brings), or raise one line saying how to install it."""
    return load(package, "Hugging Face interop (export --format hf, import hf)")
