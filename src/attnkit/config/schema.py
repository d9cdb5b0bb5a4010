"""Typed, validated run configuration: data, model, train and decode sections.

Every model is frozen and forbids unknown keys, so a typo in a YAML file or a `--set` override is
an error at the edge, never a silently ignored setting. Field defaults are the papers' defaults.
The model section is a discriminated union on `kind`.
"""

from __future__ import annotations

from typing import Annotated, Literal, Optional, Union

from pydantic import BaseModel, ConfigDict, Field, PositiveFloat, PositiveInt, model_validator

Action = Literal["fail", "warn", "skip"]


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class FilePair(Strict):
    """A parallel corpus: two line-aligned text files (plain or .gz)."""

    src: str
    tgt: str


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
    def _lengths(self) -> "Synthetic":
        if self.min_len > self.max_len:
            raise ValueError(f"min_len ({self.min_len}) must be <= max_len ({self.max_len})")
        return self


class Data(Strict):
    """Where the text comes from and how it becomes token ids.

    `corpus: multi30k` reads `{split}.{lang}.gz` from `dir`; `files` reads `train`/`valid`/`test`;
    `synthetic` generates `synthetic.task`.
    """

    corpus: Literal["files", "multi30k", "synthetic"] = "files"
    dir: Optional[str] = None
    src_lang: str = "en"
    tgt_lang: str = "de"
    train: Optional[FilePair] = None
    valid: Optional[FilePair] = None
    test: Optional[FilePair] = None
    synthetic: Synthetic = Synthetic()
    tokenizer: Literal["bpe", "unigram", "word", "char"] = "bpe"
    vocab_size: PositiveInt = 8000
    joint: bool = True
    max_len: PositiveInt = 128
    max_ratio: PositiveFloat = 3.0
    check: CheckPolicy = CheckPolicy()

    @model_validator(mode="after")
    def _corpus_fields(self) -> "Data":
        if self.corpus == "files" and (self.train is None or self.valid is None):
            raise ValueError("corpus 'files' needs data.train and data.valid (each with src and tgt)")
        return self


class Transformer(Strict):
    """Vaswani et al. (2017) encoder-decoder; defaults are the paper's base model."""

    kind: Literal["transformer"] = "transformer"
    layers: PositiveInt = 6
    encoder_layers: Optional[PositiveInt] = None
    decoder_layers: Optional[PositiveInt] = None
    d_model: PositiveInt = 512
    n_heads: PositiveInt = 8
    d_ff: PositiveInt = 2048
    dropout: float = Field(0.1, ge=0.0, lt=1.0)
    attention_dropout: float = Field(0.0, ge=0.0, lt=1.0)
    norm: Literal["post", "pre"] = "post"
    positions: Literal["sinusoidal", "learned"] = "sinusoidal"
    max_positions: PositiveInt = 1024
    share_embeddings: bool = True
    tie_output: bool = True

    @model_validator(mode="after")
    def _heads(self) -> "Transformer":
        if self.d_model % self.n_heads:
            raise ValueError(f"d_model ({self.d_model}) must be divisible by n_heads ({self.n_heads})")
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
    def _k(self) -> "TeacherForcing":
        if self.decay == "exponential" and self.k >= 1:
            raise ValueError(f"exponential decay needs k < 1 (ratio * k^i), got {self.k}")
        if self.decay == "inverse_sigmoid" and self.k < 1:
            raise ValueError(f"inverse_sigmoid decay needs k >= 1, got {self.k}")
        return self


class Rnn(Strict):
    """RNN encoder-decoder (attnkit.models.rnn): `attention` none | context | bahdanau | luong."""

    kind: Literal["rnn"]
    attention: Literal["none", "context", "bahdanau", "luong"] = "bahdanau"
    score: Literal["dot", "general", "concat"] = "general"
    input_feed: bool = True
    cell: Literal["lstm", "gru"] = "lstm"
    embed_dim: PositiveInt = 256
    hidden: PositiveInt = 512
    layers: PositiveInt = 1
    bidirectional: bool = True
    attn_dim: Optional[PositiveInt] = None
    dropout: float = Field(0.2, ge=0.0, lt=1.0)
    share_embeddings: bool = True
    tie_output: bool = False
    teacher_forcing: TeacherForcing = TeacherForcing()

    @model_validator(mode="after")
    def _sizes(self) -> "Rnn":
        if self.tie_output and self.hidden != self.embed_dim:
            raise ValueError(f"tie_output needs hidden == embed_dim, got {self.hidden} and {self.embed_dim}")
        if self.bidirectional and self.hidden % 2:
            raise ValueError(f"a bidirectional encoder splits hidden in two: it must be even, got {self.hidden}")
        return self


Model = Annotated[Union[Transformer, Rnn], Field(discriminator="kind")]


class Schedule(Strict):
    """Learning rate schedule. noam: `lr` is the scale factor; inverse_sqrt: `lr` is the peak."""

    kind: Literal["noam", "inverse_sqrt", "constant"] = "noam"
    lr: PositiveFloat = 1.0
    warmup: PositiveInt = 4000


class Train(Strict):
    seed: int = 1
    device: Literal["auto", "cpu", "cuda"] = "auto"
    precision: Literal["fp32", "bf16", "fp16"] = "fp32"
    threads: Optional[PositiveInt] = None
    max_tokens: PositiveInt = 4096
    accum: PositiveInt = 1
    betas: tuple[float, float] = (0.9, 0.98)
    eps: PositiveFloat = 1e-9
    weight_decay: float = Field(0.0, ge=0.0)
    schedule: Schedule = Schedule()
    label_smoothing: float = Field(0.1, ge=0.0, lt=1.0)
    clip_norm: float = Field(0.0, ge=0.0)
    max_steps: Optional[PositiveInt] = None
    max_epochs: Optional[PositiveInt] = None
    max_minutes: Optional[PositiveFloat] = None
    eval_every: PositiveInt = 1000
    eval_bleu: bool = True
    eval_beam: PositiveInt = 1
    eval_max_sentences: Optional[PositiveInt] = None
    early_stopping: Literal["bleu", "loss"] = "bleu"
    patience: Optional[PositiveInt] = None
    keep_last: PositiveInt = 5
    log_every: PositiveInt = 100
    max_bad_steps: PositiveInt = 5

    @model_validator(mode="after")
    def _stop(self) -> "Train":
        if self.max_steps is None and self.max_epochs is None and self.max_minutes is None:
            raise ValueError("set at least one of max_steps, max_epochs, max_minutes")
        return self


class Decode(Strict):
    beam: PositiveInt = 4
    alpha: float = Field(0.6, ge=0.0)
    nbest: PositiveInt = 1
    max_len_a: float = Field(1.0, ge=0.0)
    max_len_b: int = Field(50, ge=1)
    batch_size: PositiveInt = 64

    @model_validator(mode="after")
    def _nbest(self) -> "Decode":
        if self.nbest > self.beam:
            raise ValueError(f"nbest ({self.nbest}) must be <= beam ({self.beam})")
        return self


class Run(Strict):
    """A whole run: what to read, what to build, how to train it and how to decode with it."""

    data: Data
    model: Model = Transformer()
    train: Train
    decode: Decode = Decode()
