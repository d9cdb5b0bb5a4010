"""The translation family's config sections: `data` (parallel text) and `model` (Transformer or RNN)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import ConfigDict, Field, PositiveFloat, PositiveInt, model_validator

from attnkit.config.models import TransformerConfig
from attnkit.config.schema import Metric, RunBase, Strict

Action = Literal["fail", "warn", "skip"]


class CheckPolicy(Strict):
    """What `attnkit data check` (run before training) does with each kind of finding."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)
    mismatch: Action = "fail"
    not_utf8: Action = "fail"
    blank: Action = "skip"
    too_long: Action = "skip"
    copy_: Action = Field("warn", alias="copy")  # source == target (`copy` is a pydantic method name)
    duplicate: Action = "warn"
    ratio: Action = "warn"


class FilePair(Strict):
    """A parallel corpus: two line-aligned text files (plain or .gz). A split may instead be one
    table file (.tsv/.csv with a header, .jsonl or .json) with `data.src_column` and `data.tgt_column`."""

    src: str
    tgt: str


class Synthetic(Strict):
    """A built-in synthetic task (seeded), for tests and demos."""

    task: Literal["copy", "reverse", "sort"] = "reverse"
    vocab_size: PositiveInt = 20
    min_len: PositiveInt = 3
    max_len: PositiveInt = 12
    train_size: PositiveInt = 20000
    valid_size: PositiveInt = 200
    test_size: PositiveInt = 200
    seed: int = 1234

    @model_validator(mode="after")
    def _lengths(self) -> Synthetic:
        if self.min_len > self.max_len:
            raise ValueError(f"min_len ({self.min_len}) must be <= max_len ({self.max_len})")
        return self


class Data(Strict):
    """Where the text comes from and how it becomes token ids.

    `corpus: multi30k` reads `{split}.{lang}.gz` from `dir`; `wmt14` reads what `attnkit data fetch
    wmt14` wrote into `dir` (train.{lang}.gz, newstest2013 and newstest2014); `files` reads
    `train`/`valid`/`test`, each `{src: FILE, tgt: FILE}` (line-aligned text) or one table FILE
    (`src_column`/`tgt_column` of a .tsv/.csv with a header, .jsonl or .json); `synthetic` generates
    `synthetic.task`; `none`: no training data (a run made by `attnkit import`, which trains only as
    the `--init` of a config that names its data).
    """

    corpus: Literal["files", "multi30k", "wmt14", "synthetic", "none"] = "files"
    dir: str | None = None
    src_lang: str = "en"
    tgt_lang: str = "de"
    train: FilePair | str | None = None
    valid: FilePair | str | None = None
    test: FilePair | str | None = None
    src_column: str = "src"
    tgt_column: str = "tgt"
    synthetic: Synthetic = Synthetic()
    tokenizer: Literal["bpe", "unigram", "word", "char"] = "bpe"
    vocab_size: PositiveInt = 8000
    joint: bool = True
    max_len: PositiveInt = 128
    max_ratio: PositiveFloat = 3.0
    check: CheckPolicy = CheckPolicy()

    @model_validator(mode="after")
    def _corpus_fields(self) -> Data:
        if self.corpus == "files" and (self.train is None or self.valid is None):
            raise ValueError("corpus 'files' needs data.train and data.valid (each {src: FILE, tgt: FILE} or one table FILE)")
        return self


class TeacherForcing(Strict):
    """The probability of feeding the gold previous token, per step and sentence, as training goes.

    Bengio et al. (2015), "Scheduled Sampling", sec. 2.4, with i the update: constant: `ratio`;
    linear: max(min_ratio, ratio - slope * i); exponential: ratio * k^i (k < 1); inverse_sigmoid:
    ratio * k / (k + exp(i / k)) (k >= 1). Only RNN decoders support a ratio below 1.
    """

    ratio: float = Field(1.0, ge=0.0, le=1.0)
    decay: Literal["constant", "linear", "exponential", "inverse_sigmoid"] = "constant"
    slope: float = Field(1e-4, ge=0.0)
    k: PositiveFloat = 1000.0
    min_ratio: float = Field(0.0, ge=0.0, le=1.0)

    @model_validator(mode="after")
    def _k(self) -> TeacherForcing:
        if self.decay == "exponential" and self.k >= 1:
            raise ValueError(f"exponential decay needs k < 1 (ratio * k^i), got {self.k}")
        if self.decay == "inverse_sigmoid" and self.k < 1:
            raise ValueError(f"inverse_sigmoid decay needs k >= 1, got {self.k}")
        return self


class Rnn(Strict):
    """RNN encoder-decoder (attnkit.families.translation.rnn): `attention` none | context | bahdanau | luong."""

    kind: Literal["rnn"]
    attention: Literal["none", "context", "bahdanau", "luong"] = "bahdanau"
    score: Literal["dot", "general", "concat"] = "general"
    input_feed: bool = True
    cell: Literal["lstm", "gru"] = "lstm"
    embed_dim: PositiveInt = 256
    hidden: PositiveInt = 512
    layers: PositiveInt = 1
    bidirectional: bool = True
    attn_dim: PositiveInt | None = None
    dropout: float = Field(0.2, ge=0.0, lt=1.0)
    share_embeddings: bool = True
    tie_output: bool = False
    teacher_forcing: TeacherForcing = TeacherForcing()

    @property
    def width(self) -> int:
        """The hidden size, the width the Noam schedule scales with."""
        return self.hidden

    @model_validator(mode="after")
    def _sizes(self) -> Rnn:
        if self.tie_output and self.hidden != self.embed_dim:
            raise ValueError(f"tie_output needs hidden == embed_dim, got {self.hidden} and {self.embed_dim}")
        if self.bidirectional and self.hidden % 2:
            raise ValueError(f"a bidirectional encoder splits hidden in two: it must be even, got {self.hidden}")
        return self


Model = Annotated[TransformerConfig | Rnn, Field(discriminator="kind")]


class TranslationRun(RunBase):
    """A translation run: parallel text into an encoder-decoder."""

    METRICS = (Metric("bleu", "BLEU"),)
    EARLY_STOPPING = "bleu"
    data: Data
    model: Model = TransformerConfig()
