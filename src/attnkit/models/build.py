"""Build a model from its config section: the one place that maps `model.kind` to a class."""

from __future__ import annotations

from torch import nn

from attnkit.config.schema import Transformer as TransformerConfig
from attnkit.models.transformer import Transformer


def build_model(cfg: TransformerConfig, *, src_vocab_size: int, tgt_vocab_size: int, joint_vocab: bool) -> nn.Module:
    """The model described by `cfg` for the given vocabulary sizes."""
    match cfg.kind:
        case "transformer":
            return Transformer(
                src_vocab_size=src_vocab_size,
                tgt_vocab_size=tgt_vocab_size,
                d_model=cfg.d_model,
                n_heads=cfg.n_heads,
                d_ff=cfg.d_ff,
                encoder_layers=cfg.encoder_layers or cfg.layers,
                decoder_layers=cfg.decoder_layers or cfg.layers,
                dropout=cfg.dropout,
                attention_dropout=cfg.attention_dropout,
                pre_norm=cfg.norm == "pre",
                learned_positions=cfg.positions == "learned",
                max_positions=cfg.max_positions,
                share_embeddings=cfg.share_embeddings and joint_vocab,
                tie_output=cfg.tie_output,
            )
    raise AssertionError(f"unhandled model kind {cfg.kind}")
