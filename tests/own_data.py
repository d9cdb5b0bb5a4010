"""The shipped examples (examples/) and, per family, `--set` values that make its model tiny and its
training a few steps: shared by the tests that train `attnkit train FAMILY ...` on them."""

from __future__ import annotations

from pathlib import Path

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
TINY = {
    "translation": ["model.layers=1", "model.d_model=32", "model.n_heads=2", "model.d_ff=64", "train.max_steps=4", "train.eval_every=4",
                    "train.max_tokens=600", "train.precision=fp32", "decode.max_len_b=10"],
    "classification": ["model.embed_dim=16", "model.u=16", "model.d_a=16", "model.r=2", "model.mlp_hidden=32", "train.max_steps=4", "train.eval_every=4"],
    "parsing": ["model.layers=1", "model.d_model=32", "model.n_heads=2", "model.d_ff=64", "train.max_steps=4", "train.eval_every=4", "decode.beam=1",
                "decode.max_len_b=30", "train.precision=fp32", "train.max_tokens=600"],
    "captioning": ["model.encoder=small_cnn", "model.input_size=48", "model.cnn_layers=4", "model.cnn_channels=8", "model.feature_dim=16",
                   "model.embed_dim=16", "model.hidden_dim=32", "model.attn_dim=16", "train.max_steps=4", "train.eval_every=4",
                   "train.eval_decode=false", "train.precision=fp32"],
}  # fmt: skip


def sets(family: str, *more: str) -> list[str]:
    """`--set` options of the family's `TINY` values, then of `more` (which win)."""
    return [word for value in (*TINY[family], *more) for word in ("--set", value)]
