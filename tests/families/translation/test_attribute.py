"""A translation's outputs attributed together (`families.translation.attribute`: one teacher-forced pass scores every
output; `analysis.attribution.attributions_of_outputs`: every output's copies of the input and of the path in one
batch), checked against captum's input x gradient and integrated gradients of each output alone; and a given
translation scored, shown and attributed in place of the search's (forced decoding, `--target`)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from attnkit.analysis.attribution import TOKENS, OutputOf, attributions_of_outputs, input_x_gradient, integrated_gradients
from attnkit.cli import main
from attnkit.families import load_run
from attnkit.families.translation.attribute import forced
from attnkit.families.translation.teacher_forced import teacher_forced
from attnkit.sources import open_source
from attnkit.sources.faithfulness import gradients

pytest.importorskip("captum")
TEXT = "t1 t2 t3 t4"  # the tiny Transformer's hypothesis ends in </s>


def counted(model: torch.nn.Module, run) -> tuple[object, int]:
    """What `run()` returns and how many forward passes of `model` it made."""
    calls = []
    handle = model.register_forward_hook(lambda *_: calls.append(1))
    try:
        return run(), len(calls)
    finally:
        handle.remove()


@pytest.mark.parametrize("fixture", ["tiny_transformer_run", "tiny_rnn_run"])
@pytest.mark.parametrize("rows", [None, 45])  # 45: two outputs a pass (1 + 2 x (20 + 1) rows)
def test_every_output_in_one_pass_equals_captums_attributions_of_each_alone(request, fixture, rows):
    loaded = load_run(request.getfixturevalue(fixture))
    line = forced(loaded, TEXT)
    outputs = list(range(len(line.tgt_pieces)))
    base = 0.3 * torch.randn(line.x.shape, generator=torch.Generator().manual_seed(0))  # (S, D): a given baseline
    tokens = TOKENS if rows is None else rows * line.x.size(0)
    together, passes = counted(loaded.model, lambda: attributions_of_outputs(line.scores, outputs, line.x, baseline=base, steps=20, tokens=tokens))
    assert passes == (1 if rows is None else -(-len(outputs) // 2))
    for t, (ixg, ig) in zip(outputs, together):
        f, x, _ = loaded.family.attribution(loaded, TEXT, t)
        torch.testing.assert_close(ixg.scores, input_x_gradient(f, x).scores, atol=1e-5, rtol=0)
        alone = integrated_gradients(f, x, baseline=base, steps=20, check=False)
        torch.testing.assert_close(ig.scores, alone.scores, atol=1e-5, rtol=0)
        assert (ig.f_input, ig.f_baseline, ig.steps) == (pytest.approx(alone.f_input, abs=1e-5), pytest.approx(alone.f_baseline, abs=1e-5), 20)


def test_faithfulness_gradients_batch_a_lines_outputs_with_each_ones_step_count(tiny_transformer_run):
    """`sources.faithfulness.gradients` over a translation's scored outputs: one pass at 50 steps for every output, and
    each output's integrated gradients as the one-output path gives them (its step count chosen alone); only the outputs
    over the completeness tolerance are run again."""
    source = open_source(str(tiny_transformer_run))
    outputs = source.scored_outputs(TEXT, flow=False, truncate=False)
    together, passes = counted(source.loaded.model, lambda: gradients(outputs))
    steps = [ig.steps for _, ig in together]
    tries = [c for c in (50, 100, 200, 400, 800) if c <= max(steps)]  # the outputs over 1% are run again at twice the steps
    rows = TOKENS // outputs[0].x.size(0)  # inputs a pass
    assert passes == sum(-(-sum(s >= c for s in steps) // max(1, (rows - 1) // (c + 1))) for c in tries)  # the outputs of a try, in passes
    for e, (ixg, ig) in zip(outputs, together):
        alone = integrated_gradients(e.f, e.x, check=False)
        assert ig.steps == alone.steps
        torch.testing.assert_close(ig.scores, alone.scores, atol=1e-5, rtol=0)
        torch.testing.assert_close(ixg.scores, input_x_gradient(e.f, e.x).scores, atol=1e-5, rtol=0)


def test_a_given_translation_is_scored_as_the_search_scores_its_own(tiny_transformer_run):
    loaded = load_run(tiny_transformer_run)
    searched = forced(loaded, TEXT)
    assert searched.tgt_pieces[-1] == "</s>"
    given = forced(loaded, TEXT, target=" ".join(searched.tgt_pieces[:-1]))
    assert (given.src_pieces, given.tgt_pieces) == (searched.src_pieces, searched.tgt_pieces)
    with torch.no_grad():
        torch.testing.assert_close(given.scores(given.x[None]), searched.scores(searched.x[None]))
    other = forced(loaded, TEXT, target="t9 t9")
    assert other.tgt_pieces == ["t9", "t9", "</s>"]
    with torch.no_grad():
        assert other.scores(other.x[None]).shape == (1, 3)


def test_attention_with_a_target_shows_and_attributes_the_given_translation(tiny_transformer_run, tmp_path):
    """`attnkit attention RUN TEXT --target T --attribute ig`: the npz's output is T (EOS last), its cross-attention the
    teacher-forced pass's over T, and the attributions those of T's output scored alone (captum)."""
    out = tmp_path / "a.npz"
    assert main(["attention", str(tiny_transformer_run), TEXT, "--target", "t9 t8", "--attribute", "ixg", "ig", "--attribute-target", "1",
                 "--out", str(out)]) == 0  # fmt: skip
    z = np.load(out)
    assert list(z["target_tokens"]) == list(z["cross/queries"]) == ["t9", "t8", "</s>"]
    loaded = load_run(tiny_transformer_run)
    line = forced(loaded, TEXT, target="t9 t8")
    cross = teacher_forced(loaded.model, [(loaded.vocabs.src_vocab.encode(line.src_pieces[:-1]), loaded.vocabs.tgt_vocab.encode(["t9", "t8"]), True)])
    np.testing.assert_allclose(z["cross/layer1"], cross[0]["cross"][0].numpy(), atol=1e-6)
    f = OutputOf(line.scores, 1)
    assert str(z["attr/output"][0]) == "output 1 't8'"
    np.testing.assert_allclose(z["attr/ig"], integrated_gradients(f, line.x).scores.numpy(), atol=1e-5)
    np.testing.assert_allclose(z["attr/ixg"], input_x_gradient(f, line.x).scores.numpy(), atol=1e-5)
