"""Build a model from its config section: the one place that maps `model.kind` to a class."""

from __future__ import annotations

from torch import nn

from attnkit.config.schema import Model
from attnkit.models.rnn import RNNSeq2Seq
from attnkit.models.sentence import SelfAttentiveClassifier
from attnkit.models.transformer import Transformer


def build_model(cfg: Model, *, src_vocab_size: int, tgt_vocab_size: int, joint_vocab: bool) -> nn.Module:
    """The model described by `cfg` for the given vocabulary sizes (a sase model: words and classes)."""
    match cfg.kind:
        case "sase":
            return SelfAttentiveClassifier(
                vocab_size=src_vocab_size,
                num_classes=tgt_vocab_size,
                embed_dim=cfg.embed_dim,
                u=cfg.u,
                d_a=cfg.d_a,
                r=cfg.r,
                mlp_hidden=cfg.mlp_hidden,
                dropout=cfg.dropout,
                word_dropout=cfg.word_dropout,
                encoder=cfg.encoder,
                pooling=cfg.pooling,
                pair=cfg.pair,
            )
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
        case "rnn":
            return RNNSeq2Seq(
                src_vocab_size=src_vocab_size,
                tgt_vocab_size=tgt_vocab_size,
                attention=cfg.attention,
                score=cfg.score,
                input_feed=cfg.input_feed,
                cell=cfg.cell,
                embed_dim=cfg.embed_dim,
                hidden=cfg.hidden,
                layers=cfg.layers,
                bidirectional=cfg.bidirectional,
                attn_dim=cfg.attn_dim,
                dropout=cfg.dropout,
                share_embeddings=cfg.share_embeddings and joint_vocab,
                tie_output=cfg.tie_output,
            )
    raise AssertionError(f"unhandled model kind {cfg.kind}")
