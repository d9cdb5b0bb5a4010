"""Model sections that more than one family builds: the Transformer (translation, parsing).

A family's config names `TransformerConfig` as (one of) its `model` sections, and `build_transformer`
makes the `attnkit.models.transformer.Transformer` it describes.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, PositiveInt, model_validator

from attnkit.config.schema import Strict
from attnkit.models.transformer import Transformer as TransformerModel


class TransformerConfig(Strict):
    """Vaswani et al. (2017) encoder-decoder; defaults are the paper's base model."""

    kind: Literal["transformer"] = "transformer"
    layers: PositiveInt = 6
    encoder_layers: PositiveInt | None = None
    decoder_layers: PositiveInt | None = None
    d_model: PositiveInt = 512
    n_heads: PositiveInt = 8
    d_ff: PositiveInt = 2048
    d_k: PositiveInt | None = None  # per-head query/key width; None: d_model / n_heads (Table 3 row B varies it)
    d_v: PositiveInt | None = None  # per-head value width; None: d_model / n_heads
    dropout: float = Field(0.1, ge=0.0, lt=1.0)
    attention_dropout: float = Field(0.0, ge=0.0, lt=1.0)
    norm: Literal["post", "pre"] = "post"
    positions: Literal["sinusoidal", "learned"] = "sinusoidal"
    max_positions: PositiveInt = 1024
    share_embeddings: bool = True
    tie_output: bool = True
    activation: Literal["relu", "swish", "gelu"] = "relu"  # the FFN's; swish: OPUS-MT (Marian) models
    output_bias: bool = False  # a fixed bias on the logits (Marian's final_logits_bias; imported models)

    @property
    def width(self) -> int:
        """d_model, the width the Noam schedule scales with."""
        return self.d_model

    @model_validator(mode="after")
    def _heads(self) -> TransformerConfig:
        if (self.d_k is None or self.d_v is None) and self.d_model % self.n_heads:
            raise ValueError(f"d_model ({self.d_model}) must be divisible by n_heads ({self.n_heads}), or set d_k and d_v")
        return self


def build_transformer(
    cfg: TransformerConfig, *, src_vocab_size: int, tgt_vocab_size: int, joint: bool, model_class: type[TransformerModel] = TransformerModel, **extra: Any
) -> TransformerModel:
    """The Transformer of `cfg` for the given vocabulary sizes (`joint`: one vocabulary for both sides).

    `model_class` (a subclass of `attnkit.models.transformer.Transformer`) is built instead, with `extra`
    keyword arguments, when a family extends the model (the parser's word pointer).
    """
    return model_class(
        src_vocab_size=src_vocab_size,
        tgt_vocab_size=tgt_vocab_size,
        d_model=cfg.d_model,
        n_heads=cfg.n_heads,
        d_ff=cfg.d_ff,
        d_k=cfg.d_k,
        d_v=cfg.d_v,
        encoder_layers=cfg.encoder_layers or cfg.layers,
        decoder_layers=cfg.decoder_layers or cfg.layers,
        dropout=cfg.dropout,
        attention_dropout=cfg.attention_dropout,
        pre_norm=cfg.norm == "pre",
        learned_positions=cfg.positions == "learned",
        max_positions=cfg.max_positions,
        share_embeddings=cfg.share_embeddings and joint,
        tie_output=cfg.tie_output,
        activation=cfg.activation,
        output_bias=cfg.output_bias,
        **extra,
    )
