"""A hub id's local folder: huggingface_hub's cache, fetched into when online.

Offline (`HF_HUB_OFFLINE=1`, or `TRANSFORMERS_OFFLINE=1`, as huggingface_hub reads them) the id is
looked up in the cache only (`try_to_load_from_cache` of its config.json: the snapshot that
`refs/main` names), with no network call, no retry and nothing on stderr; not there, one line names
the id. Online, `snapshot_download` fetches what `FETCH` allows (configs, tokenizer files,
safetensors; never code or pickles) or finds it current in the cache; when the hub cannot be
reached, the cache is looked up the same way. The cache is where huggingface_hub keeps it
(`HF_HUB_CACHE`, else `HF_HOME/hub`). The exceptions are looked up by name in `huggingface_hub.errors`
and `huggingface_hub.utils`, where one version or another keeps them, so that any huggingface_hub
that transformers accepts gives the same lines.
"""

from __future__ import annotations

import re
from pathlib import Path
from types import ModuleType

from attnkit.errors import AttnkitError
from attnkit.sources.hf import require

HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*(/[A-Za-z0-9][\w.-]*)?$")
# What a snapshot fetches: configs, tokenizer files and safetensors weights; never code or pickles.
FETCH = ["*.json", "*.safetensors", "*.txt", "*.model", "*.spm", "*.tiktoken"]


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
    hub = require("huggingface_hub")
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
