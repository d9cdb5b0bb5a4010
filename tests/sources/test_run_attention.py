"""`attnkit attention` on an attnkit run: the family's own attention views, in the same npz."""

from __future__ import annotations

import json

import numpy as np
import torch

from attnkit.analysis.rollout import cross_rollout
from attnkit.cli import main
from attnkit.families import load_run
from attnkit.sources import AttentionOptions
from attnkit.sources.record import explain_inputs
from attnkit.sources.source import RunSource


def test_a_translation_run_writes_its_views(tiny_transformer_run, tmp_path, capsys):
    out = tmp_path / "run.npz"
    assert main(["attention", str(tiny_transformer_run), "t1 t2 t3", "--out", str(out), "--flow"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["kinds"] == {"encoder": 2, "decoder_self": 2, "cross": 2}
    z = np.load(out)
    loaded = load_run(tiny_transformer_run)
    views = [v for v in explain_inputs(RunSource(loaded), ["t1 t2 t3"], AttentionOptions(nbest=1))[0].views if v.role != "summary"]
    for view in views:
        assert list(z[f"{view.kind}/queries"]) == view.rows and list(z[f"{view.kind}/keys"]) == view.cols
        for l, w in enumerate(view.layers, 1):
            np.testing.assert_array_equal(z[f"{view.kind}/layer{l}"], w.float().numpy())
    assert list(z["tokens"]) == ["t1", "t2", "t3", "</s>"]
    assert list(z["target_tokens"]) == views[1].rows
    layers = {v.kind: v.layers for v in views}
    torch.testing.assert_close(torch.from_numpy(z["rollout"]), cross_rollout(layers["encoder"], layers["cross"]), atol=1e-6, rtol=1e-5)
    assert z["flow"].shape == (4, 4)


def test_a_run_refuses_hugging_face_only_options(tiny_sase_run, tmp_path, capsys):
    assert main(["attention", str(tiny_sase_run), "t1 t2", "--out", str(tmp_path / "a.npz"), "--target", "t3"]) == 2
    assert "--target is for Hugging Face models and translation runs; a classification run attends over its own output" in capsys.readouterr().err
