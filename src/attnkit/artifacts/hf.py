"""Hugging Face model folders: a hub id's local folder, and the checks made before anything loads.

Written once for every reader of Hugging Face models: the explorer (`sources.hf.load`) and the
translation family's Marian import (`families.translation.hf.importer`). It sits with the run
folders and checkpoints, below the families, so that both can use it.

**The hub.** Offline (`HF_HUB_OFFLINE=1`, or `TRANSFORMERS_OFFLINE=1`, as huggingface_hub reads
them) an id is looked up in the cache only (`try_to_load_from_cache` of its config.json: the
snapshot that `refs/main` names), with no network call, no retry and nothing on stderr; not there,
one line names the id. Online, `snapshot_download` fetches what `FETCH` allows (configs, tokenizer
files, safetensors; never code or pickles) or finds it current in the cache; when the hub cannot be
reached, the cache is looked up the same way. The cache is where huggingface_hub keeps it
(`HF_HUB_CACHE`, else `HF_HOME/hub`). The exceptions are looked up by name in
`huggingface_hub.errors` and `huggingface_hub.utils`, where one version or another keeps them, so
that any huggingface_hub that transformers accepts gives the same lines.

**The checks** (`check_folder`), each one line naming the source: no config.json; a model that
needs its own code (`auto_map` in config.json, or `.py` files: attnkit never passes
`trust_remote_code`); weights only in pickled files (`pytorch_model.bin`: unpickling can run code).

`transformers` and `huggingface_hub` are optional: `require` imports one or says, in one line,
what needs it and how to install it.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from types import ModuleType

from attnkit import extras
from attnkit.errors import AttnkitError

HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*(/[A-Za-z0-9][\w.-]*)?$")
# What a snapshot fetches: configs, tokenizer files and safetensors weights; never code or pickles.
FETCH = ["*.json", "*.safetensors", "*.txt", "*.model", "*.spm", "*.tiktoken"]
PICKLES = ("*.bin", "*.pt", "*.pth", "*.ckpt", "*.pkl")


def require(what: str, package: str = "transformers") -> ModuleType:
    """Import `transformers` (or `huggingface_hub`, which it brings), or raise one line: `what` needs it, and how to install it."""
    return extras.load(package, what)


def _errors(hub: ModuleType, *names: str) -> tuple[type[BaseException], ...]:
    """The exception classes `names` of this huggingface_hub, wherever it keeps them."""
    found = (getattr(getattr(hub, module, None), name, None) for name in names for module in ("errors", "utils"))
    return tuple({cls for cls in found if isinstance(cls, type) and issubclass(cls, BaseException)})


def offline(hub: ModuleType) -> bool:
    """Whether huggingface_hub is in offline mode (it read HF_HUB_OFFLINE / TRANSFORMERS_OFFLINE at import)."""
    return bool(getattr(hub.constants, "HF_HUB_OFFLINE", False))


def cached(hub: ModuleType, repo_id: str) -> Path | None:
    """The cached snapshot folder of `repo_id` (its main revision), or None; never touches the network."""
    config = hub.try_to_load_from_cache(repo_id, "config.json")
    return Path(config).parent if isinstance(config, str) else None


def _not_cached(source: str) -> AttnkitError:
    return AttnkitError(f"{source}: no such folder, and the hub id is not in the Hugging Face cache while offline (HF_HUB_OFFLINE or no network)")


def snapshot(source: str) -> Path:
    """The local folder of hub id `source` (module docstring); one line when there is none."""
    if not HUB_ID.match(source):
        raise AttnkitError(f"{source}: no such folder")
    hub = require(f"{source}: a Hugging Face hub id", "huggingface_hub")
    if offline(hub):
        folder = cached(hub, source)
        if folder is None:
            raise _not_cached(source)
        return folder
    unreachable = _errors(hub, "LocalEntryNotFoundError", "OfflineModeIsEnabled")
    try:
        return Path(hub.snapshot_download(repo_id=source, allow_patterns=FETCH))
    except unreachable:
        folder = cached(hub, source)
        if folder is None:
            raise _not_cached(source) from None
        return folder
    except _errors(hub, "RepositoryNotFoundError", "GatedRepoError"):
        raise AttnkitError(f"{source}: no such folder or Hugging Face model id (or it is private or gated)") from None
    except (OSError, ValueError) as e:
        raise AttnkitError(f"{source}: could not fetch it from the Hugging Face hub: {str(e).splitlines()[0] if str(e) else type(e).__name__}") from None


def resolve(source: str) -> Path:
    """The local folder of `source`: itself, or the cached (or fetched) snapshot of a hub id (`snapshot`)."""
    path = Path(source)
    if path.is_dir():
        return path
    if path.exists():
        raise AttnkitError(f"{source}: is a file, expected a model folder or a Hugging Face model id")
    return snapshot(source)


def check_folder(folder: Path, name: str, hub: bool = False) -> dict:
    """config.json, read and checked: no custom code, safetensors weights (module docstring). Returns the config."""
    try:
        config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise AttnkitError(f"{name}: no config.json, so not a Hugging Face model folder (save_pretrained writes one)") from None
    except (OSError, ValueError) as e:
        raise AttnkitError(f"{name}: config.json cannot be read: {e}") from None
    code = sorted(p.name for p in folder.glob("*.py"))
    if "auto_map" in config or code:
        what = f"config.json has auto_map {sorted(config['auto_map'])}" if "auto_map" in config else f"it ships {', '.join(code)}"
        raise AttnkitError(f"{name}: the model needs its own code ({what}); attnkit never runs a model's code (trust_remote_code)")
    if not any(folder.glob("*.safetensors")):
        pickles = sorted(p.name for pattern in PICKLES for p in folder.glob(pattern))
        if pickles:
            raise AttnkitError(
                f"{name}: only pickled weights ({', '.join(pickles)}); attnkit loads safetensors only, since unpickling can run "
                "code: convert them where you trust the file (model.save_pretrained(DIR, safe_serialization=True))"
            )
        if hub:
            raise AttnkitError(f"{name}: the hub has no safetensors weights for it; attnkit loads safetensors only (pickled .bin files can run code)")
        raise AttnkitError(f"{name}: no weights (*.safetensors) in {folder}")
    return config
