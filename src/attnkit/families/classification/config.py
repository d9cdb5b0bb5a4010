"""The sentence family's config sections: `data` (labelled text) and `model` (`kind: sase`)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, NonNegativeInt, PositiveInt, model_validator

from attnkit.config.schema import Metric, RunBase, Strict


class ClassifyData(Strict):
    """Labelled text for sentence classification (`model.kind: sase`).

    `corpus: sst` reads the SST trees `trees_{train,dev}.txt.gz` from `dir` (SST-5, or SST-2 with
    `binary`; `phrases` trains on every labelled phrase of the training trees, validation stays on
    sentences). `snli` reads SNLI pairs from `train`/`valid` (TSV) or, without them, splits
    `dir/snli_1.0_dev.tsv.gz` by premise (`dev_fraction` of the premises to validation).
    `labelled` reads `train`/`valid` TSV/CSV/JSONL files with the named columns.
    `lowercase` and `drop_symbols` (every non-word character to a space: punctuation dropped, words split at
    apostrophes and hyphens, Jain & Wallace's SST words) normalise the text before it is split into words.
    """

    corpus: Literal["sst", "snli", "labelled"]
    dir: str | None = None
    train: str | None = None
    valid: str | None = None
    text_column: str = "text"
    text2_column: str | None = None
    label_column: str = "label"
    phrases: bool = False
    binary: bool = False
    dev_fraction: float = Field(0.1, gt=0.0, lt=1.0)
    lowercase: bool = True
    drop_symbols: bool = False
    min_freq: PositiveInt = 1
    max_vocab: PositiveInt | None = None

    @model_validator(mode="after")
    def _files(self) -> ClassifyData:
        if self.corpus == "labelled" and (self.train is None or self.valid is None):
            raise ValueError("corpus 'labelled' needs data.train and data.valid (TSV, CSV or JSONL files)")
        if (self.train is None) != (self.valid is None):
            raise ValueError("give both data.train and data.valid, or neither")
        if self.corpus == "sst" and self.train is not None:
            raise ValueError("corpus 'sst' reads the trees from data.dir; use corpus 'labelled' for other files")
        return self


class Sase(Strict):
    """Self-attentive sentence embedding classifier (Lin et al. 2017; attnkit.families.classification.model).

    u, d_a, r, mlp_hidden and coef are the paper's names (its sentiment settings are u=300,
    d_a=350, r=30, mlp_hidden=3000, coef=1.0). `encoder: none` with `pooling: mean` is the
    bag-of-embeddings baseline, `pooling: last` the last-state bi-LSTM baseline. `pair` embeds
    (premise, hypothesis) pairs (SNLI; `attend` is Jain & Wallace's: the hypothesis's final state attends over
    the premise). `word_dropout` replaces training words by <unk> with that probability; `mlp_hidden: 0`
    makes the classifier one linear layer (Jain & Wallace's); `word_vectors` initialises the embedding from
    a word2vec/GloVe text file, and the words it lacks start at random (N(0, 1)) or, with `missing_vectors:
    zero`, at zero (torchtext's default, Jain & Wallace's).
    `encoder: transformer` replaces the bi-LSTM by `layers` pre-norm Transformer encoder layers of
    width embed_dim (`heads`, `d_ff`, `encoder_dropout`), whose self-attention maps rollout and flow read.
    """

    kind: Literal["sase"]
    embed_dim: PositiveInt = 300
    u: PositiveInt = 300
    d_a: PositiveInt = 350
    r: PositiveInt = 30
    mlp_hidden: NonNegativeInt = 3000
    coef: float = Field(1.0, ge=0.0)
    dropout: float = Field(0.5, ge=0.0, lt=1.0)
    word_dropout: float = Field(0.0, ge=0.0, lt=1.0)
    encoder: Literal["bilstm", "transformer", "none"] = "bilstm"
    pooling: Literal["attention", "mean", "last"] = "attention"
    pair: Literal["none", "factor", "concat", "attend"] = "none"
    word_vectors: str | None = None
    missing_vectors: Literal["random", "zero"] = "random"
    layers: PositiveInt = 2
    heads: PositiveInt = 4
    d_ff: PositiveInt = 600
    encoder_dropout: float = Field(0.1, ge=0.0, lt=1.0)

    @property
    def width(self) -> int:
        """The width of H (the width the Noam schedule scales with): 2u after the bi-LSTM, else embed_dim."""
        return 2 * self.u if self.encoder == "bilstm" else self.embed_dim

    @model_validator(mode="after")
    def _pooling(self) -> Sase:
        if self.pooling == "last" and self.encoder != "bilstm":
            raise ValueError("pooling 'last' takes the bi-LSTM's final states and needs encoder 'bilstm'")
        if self.pair == "attend" and (self.encoder, self.pooling, self.r) != ("bilstm", "attention", 1):
            raise ValueError("pair 'attend' (Jain & Wallace's) is one attention over a bi-LSTM's states: encoder bilstm, pooling attention, r 1")
        if self.encoder == "transformer" and self.embed_dim % self.heads:
            raise ValueError(f"encoder 'transformer': heads ({self.heads}) must divide embed_dim ({self.embed_dim})")
        return self


class SentenceRun(RunBase):
    """A sentence classification run: labelled sentences (or pairs) into a self-attentive classifier."""

    METRICS = (Metric("accuracy", "accuracy", "{:.4f}"),)
    EARLY_STOPPING = "accuracy"
    data: ClassifyData
    model: Sase

    @model_validator(mode="after")
    def _pairs(self) -> SentenceRun:
        if (self.model.pair != "none") != (self.data.corpus == "snli" or self.data.text2_column is not None):
            raise ValueError("model.pair needs sentence pairs (corpus snli, or data.text2_column) and pairs need model.pair")
        return self
