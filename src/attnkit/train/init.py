"""`attnkit train CONFIG --init RUN`: start from another run's weights and vocabularies.

The new run trains the init run's model on CONFIG's data, which is encoded with the init run's
tokenizers and vocabularies (the family's `init_task`), not with new ones: CONFIG's tokenizer
settings are not used. The model section is the init run's; CONFIG may change what does not touch
the weights (`TRAINING_ONLY`: dropout), and any other key it sets to another value is one error
line naming the key. The weights come from the init run's best checkpoint.

The run folder records where it started in `init.json`; `--resume` then continues it as any run,
its own config.yaml giving the model and its run.json the vocabularies, without `--init`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from torch import nn

from attnkit.artifacts.checkpoint import find_checkpoint, load_weights
from attnkit.artifacts.runs import read_run
from attnkit.config.schema import RunBase
from attnkit.errors import ConfigError
from attnkit.families.protocol import Family, Task
from attnkit.io import atomic_write_text

INIT = "init.json"
TRAINING_ONLY = frozenset({"dropout", "attention_dropout", "teacher_forcing"})  # model keys that no weight depends on


def merged_model(run: RunBase, source: RunBase, where: str) -> RunBase:
    """`run` with `source`'s model section, changed only where CONFIG set a `TRAINING_ONLY` key."""
    ours, theirs = run.model, source.model
    if type(ours) is not type(theirs) and ours.model_fields_set:
        raise ConfigError(f"model.kind: {ours.kind!r} in the config, but the weights of {where} are a {theirs.kind!r} model")
    changes = {}
    for key in sorted(ours.model_fields_set):
        mine, init = getattr(ours, key), getattr(theirs, key)
        if mine == init:
            continue
        if key not in TRAINING_ONLY:
            raise ConfigError(f"model.{key}: {mine!r} in the config, but the weights of {where} are a model with {key} {init!r} (drop the key or set it so)")
        changes[key] = mine
    return run.model_copy(update={"model": theirs.model_copy(update=changes)})


def start_from(run: RunBase, run_dir: Path, family: Family, init: str | None, resume: bool) -> tuple[RunBase, Any, Path | None]:
    """(the run to train, the vocabularies to encode its data with, the checkpoint to start from).

    Without `--init` (and not resuming a run that had one): `(run, None, None)`, nothing changes.
    """
    if resume:
        if not (run_dir / INIT).is_file():
            return run, None, None
        source, checkpoint = run_dir, None  # its own config and run.json; `--resume` loads its last checkpoint
    elif init is None:
        return run, None, None
    else:
        source, checkpoint = Path(init), find_checkpoint(init, "best")
    if family.init_task is None:
        raise ConfigError(f"--init: {family.name} runs cannot start from another run's weights")
    source_run, vocabs = read_run(source, family)
    return merged_model(run, source_run, str(source)), vocabs, checkpoint


def make_task(family: Family, run: RunBase, run_dir: Path, data_dir: str | None, vocabs: Any) -> Task:
    """The family's task, with the init run's `vocabs` when there are any."""
    if vocabs is None:
        return family.task(run, run_dir, data_dir)
    assert family.init_task is not None  # start_from checked it
    return family.init_task(run, run_dir, data_dir, vocabs)


def load_init(model: nn.Module, checkpoint: Path, run_dir: Path, write: bool) -> None:
    """Load the init checkpoint's weights into `model`; rank 0 (`write`) records it in `init.json`."""
    load_weights(model, checkpoint)
    if write:
        atomic_write_text(run_dir / INIT, json.dumps({"init": str(checkpoint.parent.parent), "checkpoint": str(checkpoint)}) + "\n")
