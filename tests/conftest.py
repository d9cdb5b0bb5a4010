"""Shared fixtures: tiny untrained run folders on disk, built in well under a second.

Plots, reports and the web app need a run folder (config.yaml, run.json, a checkpoint) but not a
model that translates well; training even a tiny one takes tens of seconds on 2 cores. These runs
hold seeded random weights over the toy vocabulary t0..t9 (word tokenizer); the sentence
classifier has the labels neg and pos.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from attnkit.artifacts.checkpoint import save_checkpoint
from attnkit.artifacts.runs import write_run
from attnkit.data.tokenizers import WordTokenizer
from attnkit.data.vocab import Vocabulary
from attnkit.families import family_of, validate_run
from attnkit.families.sentence.codec import SentenceVocabs
from attnkit.families.sentence.data import LabelMap
from attnkit.families.translation.codec import Vocabs

TINY = {
    "data": {"corpus": "synthetic", "tokenizer": "word", "joint": True},
    "train": {"max_steps": 1},
    "decode": {"beam": 3, "alpha": 0.6, "max_len_a": 1.0, "max_len_b": 3},
}
TINY_TRANSFORMER = {"kind": "transformer", "layers": 2, "d_model": 32, "n_heads": 2, "d_ff": 64, "dropout": 0.0}
TINY_RNN = {"kind": "rnn", "attention": "bahdanau", "embed_dim": 16, "hidden": 32, "dropout": 0.0}
TINY_SASE = {"kind": "sase", "embed_dim": 16, "u": 16, "d_a": 16, "r": 2, "mlp_hidden": 16, "dropout": 0.0}
# A classifier's config names its (never read) training files; labels neg/pos.
CLASSIFY = {"data": {"corpus": "labelled", "train": "train.tsv", "valid": "valid.tsv"}, "train": {"max_steps": 1, "early_stopping": "accuracy"}}


def make_tiny_run(folder: Path, model: dict, seed: int = 0) -> Path:
    """Write a run folder with one checkpoint of a seeded, untrained `model` config."""
    vocab, tokenizer = Vocabulary([f"t{i}" for i in range(10)]), WordTokenizer()
    family = family_of(model["kind"])
    if model["kind"] == "sase":
        run, vocabs = validate_run({**CLASSIFY, "model": dict(model)}, "tiny run"), SentenceVocabs(vocab, LabelMap(["neg", "pos"]))
    else:
        run, vocabs = validate_run({**TINY, "model": dict(model)}, "tiny run"), Vocabs(tokenizer, tokenizer, vocab, vocab)
    write_run(folder, run, family.vocabs_to_json(vocabs, folder))
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        save_checkpoint(folder, 1, family.build(run, vocabs), state={"step": 1})
    return folder


@pytest.fixture(scope="session")
def tiny_transformer_run(tmp_path_factory) -> Path:
    return make_tiny_run(tmp_path_factory.mktemp("runs") / "tiny-transformer", TINY_TRANSFORMER)


@pytest.fixture(scope="session")
def tiny_rnn_run(tmp_path_factory) -> Path:
    return make_tiny_run(tmp_path_factory.mktemp("runs") / "tiny-rnn", TINY_RNN)


@pytest.fixture(scope="session")
def tiny_sase_run(tmp_path_factory) -> Path:
    return make_tiny_run(tmp_path_factory.mktemp("runs") / "tiny-sase", TINY_SASE)
