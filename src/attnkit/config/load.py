"""Read a run config: YAML file + `--set a.b=c` overrides -> a validated run; dump it back.

The schema is the caller's (a family's `RunBase` subclass, chosen by `attnkit.families` from
`model.kind`), so this module knows no family.

Every problem is one `ConfigError` line naming the file (or the override), the key path and what
was expected, e.g. `configs/x.yaml: model.layers: Input should be greater than 0 (got -1)`.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ValidationError

from attnkit.errors import ConfigError
from attnkit.io import atomic_write_text

ModelT = TypeVar("ModelT", bound=BaseModel)


def read_yaml(path: str | Path) -> dict[str, Any]:
    """Read a YAML mapping; errors name the file (and line for syntax errors)."""
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"{path}: no such config file" if not path.exists() else f"{path}: not a file")
    try:
        text = path.read_text(encoding="utf-8")
        raw = yaml.safe_load(text)
    except UnicodeDecodeError as e:
        raise ConfigError(f"{path}: not valid UTF-8 ({e.reason} at byte {e.start})") from None
    except yaml.reader.ReaderError as e:  # a character YAML does not allow (a control character, say)
        raise ConfigError(f"{path}, line {text.count(chr(10), 0, e.position) + 1}: invalid YAML (character U+{e.character:04X} is not allowed)") from None
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f", line {mark.line + 1}" if mark is not None else ""
        raise ConfigError(f"{path}{where}: invalid YAML ({' '.join(str(getattr(e, 'problem', e)).split())})") from None
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise ConfigError(f"{path}: expected a mapping of sections (data, model, train, decode), got {type(raw).__name__}")
    return raw


def apply_override(tree: dict[str, Any], assignment: str) -> None:
    """Set `a.b.c=value` in a nested dict; the value is parsed as YAML (numbers, booleans, lists)."""
    key, sep, text = assignment.partition("=")
    if not sep or not key.strip():
        raise ConfigError(f"--set {assignment}: expected key.path=value")
    try:
        value = yaml.safe_load(text) if text.strip() else None
    except yaml.YAMLError:
        value = text
    parts = key.strip().split(".")
    node = tree
    for i, part in enumerate(parts[:-1]):
        child = node.setdefault(part, {})
        if not isinstance(child, dict):
            raise ConfigError(f"--set {assignment}: {'.'.join(parts[: i + 1])} is a value, not a section")
        node = child
    node[parts[-1]] = value


def _format_errors(error: ValidationError, tags: frozenset[str] = frozenset()) -> str:
    """One line for all errors; `tags` are discriminator values pydantic puts in the key path."""
    parts = []
    for err in error.errors():
        loc = [str(p) for p in err["loc"] if not str(p).startswith(("function-after", "tagged-union"))]
        loc = ".".join(p for p in loc if p not in tags)
        msg = err["msg"].removeprefix("Value error, ")
        if err["type"] == "extra_forbidden":
            msg = "unknown key"
        elif err["type"] == "missing":
            msg = "required key is missing"
        elif "input" in err and not isinstance(err["input"], (dict, list)):
            msg = f"{msg} (got {err['input']!r})"
        parts.append(f"{loc}: {msg}" if loc else msg)  # a rule over several keys names them itself
    return "; ".join(parts)


def validation_error(error: ValidationError, source: str, tags: frozenset[str] = frozenset()) -> ConfigError:
    """The one-line `ConfigError` for a pydantic error; `source` names where the values came from."""
    return ConfigError(f"{source}: {_format_errors(error, tags)}")


def validate(tree: dict[str, Any], source: str, schema: type[ModelT]) -> ModelT:
    """Validate a nested dict as `schema`; `source` names where it came from in the error."""
    model = tree.get("model")
    tags = frozenset([model["kind"]]) if isinstance(model, dict) and isinstance(model.get("kind"), str) else frozenset()
    try:
        return schema.model_validate(tree)
    except ValidationError as e:
        raise validation_error(e, source, tags) from None


def read_config(path: str | Path, overrides: Iterable[str] = ()) -> tuple[dict[str, Any], str]:
    """The YAML tree of a config file with `--set` overrides applied, and how errors name it."""
    tree = read_yaml(path)
    overrides = list(overrides)
    for assignment in overrides:
        apply_override(tree, assignment)
    return tree, str(path) + (f" (with --set {' '.join(overrides)})" if overrides else "")


def dump_config(run: BaseModel) -> str:
    """The fully resolved config as YAML (every default written out)."""
    return yaml.safe_dump(run.model_dump(mode="json", by_alias=True), sort_keys=False)


def save_config(run: BaseModel, path: str | Path) -> None:
    """Write the resolved config atomically."""
    atomic_write_text(path, dump_config(run))
