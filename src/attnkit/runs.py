"""Run folders: what a trained model needs besides its weights, written and read back safely.

`RUN/config.yaml` is the resolved config; `RUN/run.json` holds the vocabularies, the tokenizer
settings (SentencePiece models are copied into the folder) and the versions that wrote it; for a
sentence classifier (`sase`) it holds the word vocabulary and the label map instead.
`load_run` validates both before building the model and loading weights, so a folder from another
model, a vocabulary that does not match the weights or a corrupt file is one clear error.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Union

import torch
from torch import nn

from attnkit import __version__
from attnkit.config.load import read_yaml, save_config, validate
from attnkit.config.schema import Run
from attnkit.data.classify import LabelMap
from attnkit.data.tokenizers import Tokenizer, load_tokenizer, save_tokenizer
from attnkit.data.vocab import Vocabulary
from attnkit.errors import CheckpointError, ConfigError, DataError
from attnkit.io import atomic_write_text
from attnkit.models.build import build_model
from attnkit.train.checkpoint import find_checkpoint, load_weights


@dataclass
class Vocabs:
    """Tokenizers and vocabularies of both sides (the same objects when joint)."""

    src_tokenizer: Tokenizer
    tgt_tokenizer: Tokenizer
    src_vocab: Vocabulary
    tgt_vocab: Vocabulary

    @property
    def joint(self) -> bool:
        return self.src_vocab is self.tgt_vocab


@dataclass
class SentenceVocabs:
    """A sentence classifier's word vocabulary and class labels."""

    vocab: Vocabulary
    labels: LabelMap


RunVocabs = Union[Vocabs, SentenceVocabs]


@dataclass
class LoadedRun:
    run: Run
    model: nn.Module
    vocabs: RunVocabs
    checkpoint: Path


def same_vocabs(a: RunVocabs, b: RunVocabs) -> bool:
    """Whether two runs' vocabularies (and labels) agree id for id; tokenizer objects are not compared."""
    if isinstance(a, SentenceVocabs) or isinstance(b, SentenceVocabs):
        return a == b
    return a.src_vocab == b.src_vocab and a.tgt_vocab == b.tgt_vocab


def write_run(run_dir: str | Path, run: Run, vocabs: RunVocabs) -> None:
    """Write config.yaml and run.json (atomically) into `run_dir`."""
    run_dir = Path(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    save_config(run, run_dir / "config.yaml")
    info = {"attnkit_version": __version__, "torch_version": torch.__version__}
    if isinstance(vocabs, SentenceVocabs):
        info.update(vocab=vocabs.vocab.to_json(), labels=vocabs.labels.to_json())
    else:
        info.update(
            joint=vocabs.joint,
            src_tokenizer=save_tokenizer(vocabs.src_tokenizer, run_dir),
            tgt_tokenizer=save_tokenizer(vocabs.tgt_tokenizer, run_dir),
            src_vocab=vocabs.src_vocab.to_json(),
            tgt_vocab=vocabs.tgt_vocab.to_json(),
        )
    atomic_write_text(run_dir / "run.json", json.dumps(info, ensure_ascii=False))


def read_run(run_dir: str | Path) -> tuple[Run, RunVocabs]:
    """Read and validate config.yaml and run.json of a run folder."""
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise CheckpointError(f"{run_dir}: no such run folder")
    try:
        run = validate(read_yaml(run_dir / "config.yaml"), str(run_dir / "config.yaml"))
    except ConfigError as e:
        raise CheckpointError(str(e)) from None
    path = run_dir / "run.json"
    try:
        info = json.loads(path.read_text(encoding="utf-8"))
        if run.task == "classification":
            return run, SentenceVocabs(Vocabulary.from_json(info["vocab"]), LabelMap.from_json(info["labels"]))
        src_vocab = Vocabulary.from_json(info["src_vocab"])
        tgt_vocab = src_vocab if info["joint"] else Vocabulary.from_json(info["tgt_vocab"])
        src_tok = load_tokenizer(info["src_tokenizer"], run_dir)
        tgt_tok = src_tok if info["joint"] else load_tokenizer(info["tgt_tokenizer"], run_dir)
    except FileNotFoundError:
        raise CheckpointError(f"{path}: missing (not a run folder written by attnkit train)") from None
    except (UnicodeDecodeError, json.JSONDecodeError, KeyError, TypeError, ValueError, DataError) as e:
        raise CheckpointError(f"{path}: malformed ({type(e).__name__}: {e})") from None
    return run, Vocabs(src_tok, tgt_tok, src_vocab, tgt_vocab)


def build_for(run: Run, vocabs: RunVocabs) -> nn.Module:
    """The model of `run` sized for `vocabs`."""
    if isinstance(vocabs, SentenceVocabs):  # words in, classes out
        return build_model(run.model, src_vocab_size=len(vocabs.vocab), tgt_vocab_size=len(vocabs.labels), joint_vocab=False)
    return build_model(
        run.model, src_vocab_size=len(vocabs.src_vocab), tgt_vocab_size=len(vocabs.tgt_vocab), joint_vocab=vocabs.joint
    )


def load_run(
    run_dir: str | Path,
    which: str = "best",
    device: str | torch.device = "cpu",
    dtype: torch.dtype | None = None,
    *,
    task: str | None = None,
) -> LoadedRun:
    """Build the run's model and load a checkpoint (`best`, `last` or a step number), in eval mode.

    `dtype=torch.bfloat16` casts the weights for faster decoding (output log-probs stay float32).
    `task` ("translation" or "classification"): refuse a run of the other kind with one clear error.
    """
    run, vocabs = read_run(run_dir)
    if task is not None and run.task != task:
        raise CheckpointError(f"{run_dir}: a {run.task} run ({run.model.kind}); this command needs a {task} run")
    checkpoint = find_checkpoint(run_dir, which)
    model = build_for(run, vocabs)
    load_weights(model, checkpoint)
    return LoadedRun(run, model.to(device=device, dtype=dtype).eval(), vocabs, checkpoint)
