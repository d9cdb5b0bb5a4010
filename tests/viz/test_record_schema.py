"""The record's version (`viz.attention_view.SCHEMA`): records say it, and what 0.1.0 wrote still opens:
a 0.1.0 page record (no `schema`, the cross attention twice) is drawn by this version's page scripts, and
an npz of a run has the members 0.1.0 wrote, by the same names and dtypes."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from test_renderers import NODE, render

from attnkit.cli import main
from attnkit.viz.attention_view import CROSS, SCHEMA, ExplainedInput
from attnkit.viz.records import record_json

# A translation's record as 0.1.0's `attnkit report` embedded it: `viz.export`'s fields (the cross attention as
# `attention`), then the common ones, weights as floats; and an /attention page record with bytes.
RECORD_0_1_0 = {
    "id": 0, "src": ["a", "</s>"], "tgt": ["x", "</s>"], "attention": [[0.9, 0.1], [0.2, 0.8]], "score": -0.5,
    "source": "a", "text": "x", "nbest": [{"text": "x", "score": -0.5, "finished": True}],
    "maps": {"cross": {"title": "encoder-decoder attention", "role": "output", "rows": ["x", "</s>"], "cols": ["a", "</s>"],
                       "layers": [[[[0.9, 0.1], [0.2, 0.8]]]]}},
}  # fmt: skip
PAGE_0_1_0 = {"id": 0, "model": "m", "source": "a b", "text": "next token: c",
              "maps": {"self": {"title": "self-attention", "role": "input", "rows": ["a", "b"], "cols": ["a", "b"],
                                "scale": [[1.0]], "data": [["/wB/fw=="]]}}}  # fmt: skip
# What 0.1.0's `attnkit attention` wrote for a two-layer Transformer translation run (docs/explorer.md of 0.1.0).
NPZ_0_1_0 = {"tokens", "target_tokens", "rollout", "rollout_encoder",
             *(f"{k}/{m}" for k in ("encoder", "decoder_self", "cross") for m in ("layer1", "layer2", "queries", "keys"))}  # fmt: skip


def test_a_record_says_its_schema():
    view = CROSS.view(["x"], ["a"], [torch.ones(1, 1, 1)])
    assert SCHEMA == 2 and record_json(0, ExplainedInput("a", "x", [view]))["schema"] == SCHEMA


@pytest.mark.skipif(NODE is None, reason="node is absent")
@pytest.mark.parametrize("record", [RECORD_0_1_0, PAGE_0_1_0], ids=["report", "attention page"])
def test_a_0_1_0_record_is_drawn_by_this_versions_page(record):
    shown = render("translation", record)
    assert {"attn-heatmap", "attn-kind"} <= set(shown["classes"]) and record["text"] in shown["text"]


def test_an_npz_has_the_members_0_1_0_wrote(tiny_transformer_run, tmp_path):
    old = tmp_path / "old.npz"  # a 0.1.0 file: it opens with numpy as it did
    np.savez(old, **{name: np.zeros((2, 2, 2), np.float32) if "/layer" in name else np.array(["a"]) for name in NPZ_0_1_0})
    assert set(np.load(old)) == NPZ_0_1_0
    assert main(["attention", str(tiny_transformer_run), "t1 t2 t3", "--out", str(tmp_path / "new.npz")]) == 0
    new = np.load(tmp_path / "new.npz")
    assert set(new) == NPZ_0_1_0
    assert all(new[n].dtype == np.float32 for n in NPZ_0_1_0 if "/layer" in n or n.startswith("rollout"))
    assert all(new[n].dtype.kind == "U" for n in NPZ_0_1_0 if n.endswith(("queries", "keys", "tokens")))
