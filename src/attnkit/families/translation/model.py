"""Build a translation run's model: the Transformer or an RNN encoder-decoder, sized for its vocabularies."""

from __future__ import annotations

from torch import nn

from attnkit.config.models import TransformerConfig, build_transformer
from attnkit.families.translation.codec import Vocabs
from attnkit.families.translation.config import Rnn, TranslationRun
from attnkit.families.translation.rnn import RNNSeq2Seq


def build(run: TranslationRun, vocabs: Vocabs) -> nn.Module:
    """The model described by `run.model` for the given vocabularies."""
    cfg, joint = run.model, vocabs.joint
    sizes = {"src_vocab_size": len(vocabs.src_vocab), "tgt_vocab_size": len(vocabs.tgt_vocab)}
    if isinstance(cfg, TransformerConfig):
        return build_transformer(cfg, **sizes, joint=joint)
    assert isinstance(cfg, Rnn)
    return RNNSeq2Seq(
        **sizes,
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
        share_embeddings=cfg.share_embeddings and joint,
        tie_output=cfg.tie_output,
    )
