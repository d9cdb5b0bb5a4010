"""Typed, validated run configuration: data, model, train and decode sections.

Every model is frozen and forbids unknown keys, so a typo in a YAML file or a `--set` override is
an error at the edge, never a silently ignored setting. Field defaults are the papers' defaults.
The model section is a discriminated union on `kind`.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, Optional, Union

from pydantic import BaseModel, ConfigDict, Discriminator, Field, PositiveFloat, PositiveInt, Tag, model_validator

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


class ClassifyData(Strict):
    """Labelled text for sentence classification (`model.kind: sase`).

    `corpus: sst` reads the SST trees `trees_{train,dev}.txt.gz` from `dir` (SST-5, or SST-2 with
    `binary`; `phrases` trains on every labelled phrase of the training trees, validation stays on
    sentences). `snli` reads SNLI pairs from `train`/`valid` (TSV) or, without them, splits
    `dir/snli_1.0_dev.tsv.gz` by premise (`dev_fraction` of the premises to validation).
    `labelled` reads `train`/`valid` TSV/CSV/JSONL files with the named columns.
    """

    corpus: Literal["sst", "snli", "labelled"]
    dir: Optional[str] = None
    train: Optional[str] = None
    valid: Optional[str] = None
    text_column: str = "text"
    text2_column: Optional[str] = None
    label_column: str = "label"
    phrases: bool = False
    binary: bool = False
    dev_fraction: float = Field(0.1, gt=0.0, lt=1.0)
    lowercase: bool = True
    min_freq: PositiveInt = 1
    max_vocab: Optional[PositiveInt] = None

    @model_validator(mode="after")
    def _files(self) -> "ClassifyData":
        if self.corpus == "labelled" and (self.train is None or self.valid is None):
            raise ValueError("corpus 'labelled' needs data.train and data.valid (TSV, CSV or JSONL files)")
        if (self.train is None) != (self.valid is None):
            raise ValueError("give both data.train and data.valid, or neither")
        if self.corpus == "sst" and self.train is not None:
            raise ValueError("corpus 'sst' reads the trees from data.dir; use corpus 'labelled' for other files")
        return self


def _data_kind(value: Any) -> str:
    corpus = value.get("corpus") if isinstance(value, dict) else getattr(value, "corpus", None)
    return "classify" if corpus in ("sst", "snli", "labelled") else "translate"


DataSection = Annotated[
    Union[Annotated[Data, Tag("translate")], Annotated[ClassifyData, Tag("classify")]], Discriminator(_data_kind)
]


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


class Sase(Strict):
    """Self-attentive sentence embedding classifier (Lin et al. 2017; attnkit.models.sentence).

    u, d_a, r, mlp_hidden and coef are the paper's names (its sentiment settings are u=300,
    d_a=350, r=30, mlp_hidden=3000, coef=1.0). `encoder: none` with `pooling: mean` is the
    bag-of-embeddings baseline, `pooling: last` the last-state bi-LSTM baseline. `pair` embeds
    (premise, hypothesis) pairs (SNLI). `word_dropout` replaces training words by <unk> with that
    probability; `word_vectors` initialises the embedding from a word2vec/GloVe text file.
    """

    kind: Literal["sase"]
    embed_dim: PositiveInt = 300
    u: PositiveInt = 300
    d_a: PositiveInt = 350
    r: PositiveInt = 30
    mlp_hidden: PositiveInt = 3000
    coef: float = Field(1.0, ge=0.0)
    dropout: float = Field(0.5, ge=0.0, lt=1.0)
    word_dropout: float = Field(0.0, ge=0.0, lt=1.0)
    encoder: Literal["bilstm", "none"] = "bilstm"
    pooling: Literal["attention", "mean", "last"] = "attention"
    pair: Literal["none", "factor", "concat"] = "none"
    word_vectors: Optional[str] = None

    @model_validator(mode="after")
    def _pooling(self) -> "Sase":
        if self.pooling == "last" and self.encoder != "bilstm":
            raise ValueError("pooling 'last' takes the bi-LSTM's final states and needs encoder 'bilstm'")
        return self


Model = Annotated[Union[Transformer, Rnn, Sase], Field(discriminator="kind")]


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
    max_sentences: Optional[PositiveInt] = None  # also at most this many examples per batch
    early_stopping: Literal["bleu", "loss", "accuracy"] = "bleu"
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

    data: DataSection
    model: Model = Transformer()
    train: Train
    decode: Decode = Decode()

    @property
    def task(self) -> Literal["translation", "classification"]:
        """What the run trains: translation (transformer, rnn) or classification (sase)."""
        return "classification" if self.model.kind == "sase" else "translation"

    @model_validator(mode="after")
    def _task(self) -> "Run":
        classify_data = isinstance(self.data, ClassifyData)
        if classify_data != (self.task == "classification"):
            need = "a classification corpus (sst, snli, labelled)" if self.task == "classification" else "a translation corpus (files, multi30k, synthetic)"
            raise ValueError(f"model kind {self.model.kind!r} needs {need}, got data.corpus {self.data.corpus!r}")
        if self.task == "classification" and self.train.early_stopping == "bleu":
            raise ValueError("train.early_stopping: bleu is for translation; use accuracy or loss for a sase model")
        if self.task == "translation" and self.train.early_stopping == "accuracy":
            raise ValueError("train.early_stopping: accuracy is for classification; use bleu or loss")
        if self.task == "classification" and (self.model.pair != "none") != (self.data.corpus == "snli" or self.data.text2_column is not None):
            raise ValueError("model.pair needs sentence pairs (corpus snli, or data.text2_column) and pairs need model.pair")
        return self
