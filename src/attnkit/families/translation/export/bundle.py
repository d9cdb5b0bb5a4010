"""An export folder: the engine's files, the tokenizer and vocabulary, and `attnkit-export.json`.

`write_bundle` builds the whole folder in a temporary beside `--out` and renames it into place
(`io.atomic_dir`): an export that fails leaves nothing half-written, and an existing folder is
replaced only if it is an earlier attnkit export. `read_bundle` is the inverse, for the runners.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from attnkit import extras
from attnkit.artifacts.runs import LoadedRun
from attnkit.config.schema import Decode
from attnkit.errors import AttnkitError, CheckpointError
from attnkit.families.translation.codec import Vocabs, encode_sources, vocabs_from_json, vocabs_to_json
from attnkit.io import atomic_dir, atomic_write_text
from attnkit.version import __version__

MANIFEST = "attnkit-export.json"
ENGINES = {"ctranslate2": ("ctranslate2",), "onnx": ("onnx", "onnxscript"), "hf": ("transformers",)}  # what `attnkit export --format F` imports


def optional(package: str) -> ModuleType:
    """Import an optional package, or raise one error line saying how to install it (`attnkit.extras`)."""
    return extras.load(package, f"the {package} engine of attnkit export")


def require_engine(fmt: str) -> None:
    """Check that the packages of `attnkit export --format fmt` are installed, before any work."""
    extras.require(f"attnkit export --format {fmt}", *ENGINES.get(fmt, ()))


@dataclass
class Bundle:
    """A read export folder: its format, the run's vocabularies and decode settings."""

    folder: Path
    format: str
    vocabs: Vocabs
    decode: Decode
    info: dict[str, Any]

    def source_ids(self, lines: Sequence[str], source: str = "input") -> list[list[int]]:
        """Each line's source ids (no EOS), as `attnkit translate` encodes them."""
        return encode_sources(self.vocabs, lines, self.decode.max_src_len, source)[1]

    def source_tokens(self, lines: Sequence[str], source: str = "input") -> list[list[str]]:
        """Each line's source pieces as the model's vocabulary spells them (unknown ones as `<unk>`), no EOS."""
        itos = self.vocabs.src_vocab.to_json()["tokens"]
        return [[itos[i] for i in ids] for ids in self.source_ids(lines, source)]

    def text(self, ids: Sequence[int]) -> str:
        """Output ids -> text, as `attnkit translate` does (stop at EOS, drop PAD and BOS)."""
        return self.vocabs.tgt_tokenizer.detokenize(self.vocabs.tgt_vocab.decode(ids))

    @functools.cached_property
    def target_ids(self) -> dict[str, int]:
        """Target piece -> id, specials included."""
        return {piece: i for i, piece in enumerate(self.vocabs.tgt_vocab.to_json()["tokens"])}

    def text_of_pieces(self, pieces: Sequence[str]) -> str:
        """`text` of output pieces spelled as the vocabulary spells them."""
        return self.text([self.target_ids[p] for p in pieces])


def write_bundle(out: str | Path, fmt: str, loaded: LoadedRun, write_engine: Callable[[Path], dict[str, Any]]) -> Path:
    """Write the export folder `out`: `write_engine(folder)` writes the engine's files and returns what the manifest records of them.

    Raises:
        AttnkitError: `out` exists and is not an attnkit export folder.
    """
    out = Path(out)
    if out.exists() and not (out / MANIFEST).is_file():
        raise AttnkitError(f"{out}: exists and is not an attnkit export folder; give a new --out")
    with atomic_dir(out, ".export-") as tmp:
        engine = write_engine(tmp)
        manifest = {
            "format": fmt,
            "attnkit": __version__,
            "run": str(loaded.folder),
            "checkpoint": str(loaded.checkpoint),
            "engine": engine,
            "decode": loaded.run.decode.model_dump(),
            "vocabs": vocabs_to_json(loaded.vocabs, tmp),
        }
        atomic_write_text(tmp / MANIFEST, json.dumps(manifest, indent=1) + "\n")
    return out


def read_bundle(folder: str | Path, fmt: str) -> Bundle:
    """Read an export folder of format `fmt`.

    Raises:
        CheckpointError: not an export folder, another format, or a malformed manifest.
    """
    folder = Path(folder)
    path = folder / MANIFEST
    try:
        info = json.loads(path.read_text(encoding="utf-8"))
        found = info["format"]
        if found != fmt:
            raise CheckpointError(f"{folder}: a {found} export, not {fmt}")
        return Bundle(folder, fmt, vocabs_from_json(info["vocabs"], folder), Decode.model_validate(info["decode"]), info)
    except FileNotFoundError:
        raise CheckpointError(f"{path}: missing (not a folder written by attnkit export)") from None
    except (UnicodeDecodeError, json.JSONDecodeError, KeyError, TypeError, ValueError) as e:
        raise CheckpointError(f"{path}: malformed ({type(e).__name__}: {e})") from None
