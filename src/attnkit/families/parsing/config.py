"""The parsing family's config sections: `data` (a Penn Treebank) and `model` (the shared
Transformer, or with `kind: chart` the self-attentive chart parser, `ChartModel`).

A parsing config names its family with `task: parsing` (the Transformer is also translation's
model, `attnkit.families.family_for`). Vaswani et al. (2017), sec. 6.3, train a 4-layer
Transformer (d_model 1024) on the WSJ and decode with beam 21, alpha 0.3 and at most
input length + 300 output symbols; the presets `parse-wsj` and `parse-ptb` say how close each one
stays to that.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Discriminator, Field, PositiveInt, Tag, model_validator

from attnkit.config.models import TransformerConfig
from attnkit.config.schema import Metric, RunBase, Strict
from attnkit.errors import DataError

SAMPLE = Path("..") / "shared" / "data" / "ptb_sample" / "treebank.zip"  # beside a checkout


class ParseData(Strict):
    """Where the trees come from and how they become sequences (`families.parsing.linear`).

    `treebank`: a tree file, a folder of `.mrg` files or a zip (NLTK's `treebank.zip`); without
    it, `DATA_DIR/ptb` (`data/ptb` by default), then `../shared/data/ptb_sample/treebank.zip`.
    `split: sample` is the NLTK 10% sample by file (wsj_0001-0179 train, 0180-0189 dev, 0190-0199
    test); `wsj` the full treebank by section (02-21 / 22 / 23). `leaves: placeholder` writes each
    word as ``XX`` in the target (Vinyals et al. 2015), `words` writes the word itself.
    Training trees of more than `max_len` words are left out (dev and test trees never are);
    words seen fewer than `min_freq` times in training are `<unk>` (`unknown: unk`) or their
    shape-and-suffix class (`unknown: signature`, `codec.signature`). `train_fraction` keeps only
    the first part of the training trees, in file order (for data-efficiency studies).
    """

    treebank: str | None = None
    split: Literal["sample", "wsj", "files"] = "sample"
    train: str | None = None
    valid: str | None = None
    leaves: Literal["placeholder", "words"] = "placeholder"
    max_len: PositiveInt = 100
    min_freq: PositiveInt = 2
    unknown: Literal["unk", "signature"] = "unk"
    train_fraction: float = Field(1.0, gt=0.0, le=1.0)

    @property
    def keep_words(self) -> bool:
        return self.leaves == "words"

    @model_validator(mode="before")
    @classmethod
    def _files_implied(cls, data: Any) -> Any:
        if isinstance(data, dict) and data.get("train") is not None and "split" not in data:
            return {**data, "split": "files"}
        return data

    @model_validator(mode="after")
    def _files(self) -> ParseData:
        if self.split == "files" and (self.train is None or self.valid is None):
            raise ValueError("split 'files' needs data.train and data.valid (files of bracketed trees)")
        if self.split != "files" and (self.train, self.valid) != (None, None):
            raise ValueError(f"data.train and data.valid are read with split 'files', not {self.split!r} (which reads data.treebank)")
        return self

    def treebank_path(self, data_dir: str | None = None) -> Path:
        """The treebank to read: `treebank`, else the first of the default places that exists.

        Raises:
            DataError: None of them exists.
        """
        if self.treebank is not None:
            return Path(self.treebank)
        shared = os.environ.get("ATTNKIT_SHARED_DATA")
        candidates = [Path(data_dir or "data") / "ptb", SAMPLE] + ([Path(shared) / "ptb_sample" / "treebank.zip"] if shared else [])
        for path in candidates:
            if path.exists():
                return path
        raise DataError(f"no treebank: set data.treebank (looked in {', '.join(str(p) for p in candidates)})")


class ParseModel(TransformerConfig):
    """The shared Transformer section plus `pointer`: the decoder input also carries the encoder
    state of the next word to write (`families.parsing.model`; Ma et al. 2017), and `tagger`: a
    linear layer on the encoder predicts each word's POS tag, trained with the parse. Both off by
    default, as in the paper."""

    pointer: bool = False
    tagger: bool = False


class ChartModel(Strict):
    """The self-attentive chart parser (Kitaev & Klein 2018; `families.parsing.chart.model`): `kind: chart`.

    Defaults are the paper's (sec. 5: 8 layers, 8 heads, d_kv 64, d_ff 2048, label MLP 250,
    residual and attention dropout 0.2, ReLU dropout 0.1, character embeddings 32) except
    `d_model` (the paper's 1024); the content and the position partitions are d_model/2 each.
    `words`: word embeddings added to the character-level representations; `tagger`: predict the
    POS tags (for EVALB) with a linear layer on the encoder, trained with the parse.
    `word_dropout_alpha` (training only, 0: off): a word seen c times in the training trees is read
    as an unknown word (its signature, or `<unk>`) with probability alpha / (alpha + c), so that the
    character-level representations learn to stand alone as they must for unknown words (the
    reference code of Kitaev & Klein replaces a word by UNK with probability 1 / (1 + c)).
    """

    kind: Literal["chart"]
    layers: PositiveInt = 8
    d_model: PositiveInt = 1024
    n_heads: PositiveInt = 8
    d_kv: PositiveInt = 64
    d_ff: PositiveInt = 2048
    d_char: PositiveInt = 32
    d_label_hidden: PositiveInt = 250
    dropout: float = Field(0.2, ge=0.0, lt=1.0)
    attention_dropout: float = Field(0.2, ge=0.0, lt=1.0)
    relu_dropout: float = Field(0.1, ge=0.0, lt=1.0)
    embedding_dropout: float = Field(0.2, ge=0.0, lt=1.0)
    max_positions: PositiveInt = 302
    words: bool = True
    tagger: bool = True
    word_dropout_alpha: float = Field(0.0, ge=0.0)

    @property
    def width(self) -> int:
        """d_model, the width the Noam schedule scales with."""
        return self.d_model

    @model_validator(mode="after")
    def _even(self) -> ChartModel:
        if self.d_model % 2 or self.d_kv % 2 or self.d_ff % 2:
            raise ValueError("d_model, d_kv and d_ff must be even (content and position halves)")
        return self


def _model_kind(model: object) -> str:
    """The `kind` of a model section (a dict or a model); the Transformer when it names none."""
    return model.get("kind", "transformer") if isinstance(model, dict) else getattr(model, "kind", "transformer")


class ParseRun(RunBase):
    """A parsing run: PTB trees, linearised, into the Transformer, or as span charts into the chart
    parser (`model.kind: chart`) (`task: parsing`)."""

    METRICS = (Metric("f1", "F1"),)
    EARLY_STOPPING = "f1"
    task: Literal["parsing"]
    data: ParseData = ParseData()
    model: Annotated[Annotated[ParseModel, Tag("transformer")] | Annotated[ChartModel, Tag("chart")], Discriminator(_model_kind)] = ParseModel()
