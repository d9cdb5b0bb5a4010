"""The captioning family's config sections: `data` (images + captions) and `model` (`kind: show_attend_tell`)."""

from __future__ import annotations

from typing import Literal

from pydantic import ConfigDict, Field, PositiveInt, model_validator

from attnkit.config.schema import Metric, RunBase, Strict
from attnkit.extras import Need

SCORERS = Need("validation's caption BLEU-4 (train.eval_decode; off: --set train.eval_decode=false)", ("pycocoevalcap",))


class CaptionData(Strict):
    """Captioned images: a folder or zip of images and a caption file for training and for validation.

    Caption files are ``IMAGE<TAB>caption`` or Flickr8k token files (``IMAGE_ID#K<TAB>caption``),
    TSV with a header, JSONL, or a Karpathy split file (``dataset_coco.json``: its ``train`` and
    ``restval`` images train, its ``val`` images validate) (`attnkit.families.captioning.captions`);
    `image_column`/`caption_column` name TSV/JSONL fields. `images` is the folder (or zip) of every
    split, `captions` the caption file of every split (a Karpathy file); `train_images` and the
    others name one split's. Relative paths are read under `dir` (or ``attnkit train --data DIR``).
    Captions are lowercased and split into words (punctuation dropped, `codec.words`); training
    captions keep at most `max_len` words, words seen fewer than `min_freq` times in the training
    captions become <unk>.
    """

    dir: str | None = None
    images: str | None = None
    captions: str | None = None
    train_images: str | None = None
    train_captions: str | None = None
    valid_images: str | None = None
    valid_captions: str | None = None
    image_column: str = "image"
    caption_column: str = "caption"
    min_freq: PositiveInt = 5
    max_len: PositiveInt = 20

    @model_validator(mode="after")
    def _splits(self) -> CaptionData:
        for split in ("train", "valid"):
            for what, shared in (("images", self.images), ("captions", self.captions)):
                if getattr(self, f"{split}_{what}") is None and shared is None:
                    raise ValueError(f"data.{split}_{what} is missing: set it, or data.{what} for every split")
        return self

    def split_files(self, split: str) -> tuple[str, str]:
        """(captions, images) of a split (`train` or `valid`), before `dir` is applied."""
        captions, images = getattr(self, f"{split}_captions") or self.captions, getattr(self, f"{split}_images") or self.images
        assert captions is not None and images is not None  # `_splits`
        return captions, images

    @property
    def shared_images(self) -> bool:
        """Whether the splits read one folder (so it may hold images of other splits)."""
        return self.split_files("train")[1] == self.split_files("valid")[1]


class ShowAttendTellConfig(Strict):
    """Show, Attend and Tell with deterministic soft attention (Xu et al. 2015; `model.ShowAttendTell`).

    `encoder`: ``lite0`` (EfficientNet-Lite0 ImageNet weights; frozen unless `finetune`, and then
    its features are computed once and cached) or ``small_cnn`` (trained from scratch with the
    decoder; also the fallback when the Lite0 weights package is absent). The grid is
    input_size / 32 (Lite0) or input_size / 2^cnn_layers (small CNN). `feature_dim` projects the
    encoder's channels to the annotation width D (1x1, learned) before `self_attention` SAGAN
    blocks (0 or 1) and the decoder. `attention: mean` replaces the soft attention by the mean
    annotation vector (the fixed-context ablation). `positions` adds a learned embedding per cell.
    `lambda` weighs the doubly stochastic penalty (Sec. 4.2.1).
    """

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)
    kind: Literal["show_attend_tell"]
    encoder: Literal["lite0", "small_cnn"] = "lite0"
    finetune: bool = False
    input_size: PositiveInt = 224
    cnn_layers: PositiveInt = 5
    cnn_channels: PositiveInt = 64
    feature_dim: PositiveInt = 512
    self_attention: int = Field(0, ge=0, le=1)
    attention: Literal["soft", "mean"] = "soft"
    positions: bool = False
    embed_dim: PositiveInt = 256
    hidden_dim: PositiveInt = 512
    attn_dim: PositiveInt = 256
    dropout: float = Field(0.5, ge=0.0, lt=1.0)
    lambda_: float = Field(1.0, ge=0.0, alias="lambda")

    @property
    def width(self) -> int:
        """The LSTM's hidden width (what a Noam schedule scales with)."""
        return self.hidden_dim

    @property
    def cached(self) -> bool:
        """Whether training reads cached encoder features (a frozen Lite0) instead of images."""
        return self.encoder == "lite0" and not self.finetune

    @model_validator(mode="after")
    def _grid(self) -> ShowAttendTellConfig:
        stride = 32 if self.encoder == "lite0" else 2**self.cnn_layers
        if self.input_size % stride:
            raise ValueError(f"input_size {self.input_size} must be a multiple of the encoder's stride {stride}")
        return self

    @property
    def grid(self) -> int:
        """Cells per side of the feature map (gh = gw)."""
        return self.input_size // (32 if self.encoder == "lite0" else 2**self.cnn_layers)


class CaptionRun(RunBase):
    """An image captioning run: captioned images into a Show-Attend-Tell captioner."""

    METRICS = (Metric("bleu4", "BLEU-4"),)
    EARLY_STOPPING = "bleu4"
    data: CaptionData
    model: ShowAttendTellConfig

    def needs(self) -> tuple[Need, ...]:
        """Validation scores BLEU-4 with pycocoevalcap (`scores.bleu4`) unless train.eval_decode is off."""
        return (SCORERS,) if self.train.eval_decode else ()
