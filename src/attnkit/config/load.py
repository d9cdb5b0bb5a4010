"""Read a run config: YAML file + `--set a.b=c` overrides -> validated `Run`; dump it back.

Every problem is one `ConfigError` line naming the file (or the override), the key path and what
was expected, e.g. `configs/x.yaml: model.layers: Input should be greater than 0 (got -1)`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable

import yaml
from pydantic import ValidationError

from attnkit.config.schema import Run
from attnkit.errors import ConfigError
from attnkit.io import atomic_write_text


def read_yaml(path: str | Path) -> dict[str, Any]:
    """Read a YAML mapping; errors name the file (and line for syntax errors)."""
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"{path}: no such config file" if not path.exists() else f"{path}: not a file")
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError as e:
        raise ConfigError(f"{path}: not valid UTF-8 ({e.reason} at byte {e.start})") from None
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f", line {mark.line + 1}" if mark is not None else ""
        raise ConfigError(f"{path}{where}: invalid YAML ({getattr(e, 'problem', e)})") from None
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


def _format_errors(error: ValidationError) -> str:
    parts = []
    for err in error.errors():
        loc = ".".join(str(p) for p in err["loc"] if not str(p).startswith(("function-after", "tagged-union")))
        loc = ".".join(p for p in loc.split(".") if p not in ("transformer", "translate", "classify")) or "(top level)"
        msg = err["msg"].removeprefix("Value error, ")
        if err["type"] == "extra_forbidden":
            msg = "unknown key"
        elif err["type"] == "missing":
            msg = "required key is missing"
        elif "input" in err and not isinstance(err["input"], (dict, list)):
            msg = f"{msg} (got {err['input']!r})"
        parts.append(f"{loc}: {msg}")
    return "; ".join(parts)


def validate(tree: dict[str, Any], source: str) -> Run:
    """Validate a nested dict as a `Run`; `source` names where it came from in the error."""
    model = tree.get("model")
    if isinstance(model, dict) and "kind" not in model:
        tree = {**tree, "model": {"kind": "transformer", **model}}  # the default model kind
    try:
        return Run.model_validate(tree)
    except ValidationError as e:
        raise ConfigError(f"{source}: {_format_errors(e)}") from None


def load_config(path: str | Path, overrides: Iterable[str] = ()) -> Run:
    """Load, override and validate a run config."""
    tree = read_yaml(path)
    overrides = list(overrides)
    for assignment in overrides:
        apply_override(tree, assignment)
    source = str(path) + (f" (with --set {' '.join(overrides)})" if overrides else "")
    return validate(tree, source)


def dump_config(run: Run) -> str:
    """The fully resolved config as YAML (every default written out)."""
    return yaml.safe_dump(run.model_dump(mode="json", by_alias=True), sort_keys=False)


def save_config(run: Run, path: str | Path) -> None:
    """Write the resolved config atomically."""
    atomic_write_text(path, dump_config(run))
