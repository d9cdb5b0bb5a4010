"""Attributions of an attnkit translation run's output (`Family.attribution`, `families.translation.attribute`):
f is the model's log-probability of the token it emitted at t, integrated gradients of it are complete within
1%, and the npz, the page and the report carry them with the same keys as a Hugging Face model's, their taus
recomputed here from the npz's own arrays (`test_agreement.expected_rows`)."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import torch
from test_agreement import DATA, expected_rows

from attnkit.analysis.attribution import STEPS, integrated_gradients
from attnkit.analysis.correlation import kendall_tau
from attnkit.cli import main
from attnkit.data.batching import collate
from attnkit.families import load_run
from attnkit.families.translation.attribute import source_embeddings, token_score
from attnkit.families.translation.translate import translate
from attnkit.sources import AttentionOptions, export_attention, open_source
from attnkit.sources.collect import Collector
from attnkit.sources.page import page_record
from attnkit.sources.record import explain_inputs
from attnkit.sources.scored import Discard
from attnkit.sources.source import RunSource

pytest.importorskip("captum")
TEXT = "t1 t2 t3 t4"


def _shown(loaded, text: str):
    """The explorer's views of `text` (the cross view's rows are the output tokens)."""
    return {v.kind: v for v in explain_inputs(RunSource(loaded), [text], AttentionOptions(nbest=1))[0].views}


@pytest.mark.slow
@pytest.mark.parametrize("fixture", ["tiny_transformer_run", "tiny_rnn_run"])
@pytest.mark.parametrize("text", [TEXT, "t5 t5"])  # the Transformer's hypothesis of TEXT ends in </s>, the others are cut
def test_f_is_the_log_probability_of_the_emitted_token_and_ig_is_complete(request, fixture, text):
    """Summed over the output positions, f at the input is the decoder's own log P(Y | X) of the shown
    hypothesis; integrated gradients of each position are complete within 1%."""
    loaded = load_run(request.getfixturevalue(fixture))
    cross = _shown(loaded, text)["cross"]
    best = translate(loaded.model, loaded.vocabs, [text], loaded.run.decode.with_overrides(nbest=1))[0][0]
    assert best.tgt_pieces == cross.rows
    total = 0.0
    for t in range(len(cross.rows)):
        f, x, label = loaded.family.attribution(loaded, text, t)
        assert label == f"output {t} {cross.rows[t]!r}" and x.shape == (len(cross.cols), x.size(1))
        with torch.no_grad():
            fx, f0 = f(x[None]).item(), f(torch.zeros_like(x)[None]).item()
        total += fx
        a = integrated_gradients(f, x)
        assert a.relative_error <= 0.01 and a.steps >= STEPS
        assert a.scores.sum().item() == pytest.approx(fx - f0, rel=0.011, abs=1e-6)
    assert total == pytest.approx(best.log_prob, abs=1e-4)


def test_token_score_is_the_encoder_run_from_its_embeddings(tiny_transformer_run):
    """The hook gives what the explicit path (positions of sqrt(d) e, the encoder layers, the decoder) gives,
    as the benchmark's own function did before it called the family's."""
    model = load_run(tiny_transformer_run).model
    b = collate([([5, 6, 7], [8, 9])], [0])
    f = token_score(model, b.src, b.src_keep, b.tgt_in, 1, 9)
    e = source_embeddings(model, b.src)[None] + 0.1 * torch.randn(3, 4, model.d_model)  # (3, S, D)
    x = model.positions(e * math.sqrt(model.d_model))
    for layer in model.encoder_layers:
        x, _ = layer(x, b.src_keep.expand(3, -1)[:, None, None, :])
    feats, _ = model.decode(b.tgt_in.expand(3, -1), model.encoder_norm(x), b.src_keep.expand(3, -1))  # (3, T, D)
    torch.testing.assert_close(f(e), model.logits(feats[:, 1]).log_softmax(-1)[:, 9], atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize(("fixture", "output"), [("tiny_transformer_run", 2), ("tiny_rnn_run", None)])
def test_the_npz_of_a_run_carries_attributions_and_their_taus(request, tmp_path, fixture, output):
    folder = str(request.getfixturevalue(fixture))
    options = AttentionOptions(attribute=("ixg", "ig"), flow=True, output=output)
    summary = export_attention(folder, TEXT, tmp_path / "a.npz", options)
    z = np.load(tmp_path / "a.npz")
    t = output or 0
    assert int(z["attr/row"]) == t and z["attr/output"][0] == summary["attributed"] == f"output {t} {str(z['cross/queries'][t])!r}"
    assert z["attr/ig"].shape == z["attr/ixg"].shape == (len(z["tokens"]),) and float(z["attr/ig_relative_error"]) <= 0.01
    layers = sorted(n for n in z.files if n.startswith("cross/layer"))
    if "rollout" in z.files:  # the Transformer: cross layers, the cross rollout C R_enc, and the flow c_t F_enc
        expected = expected_rows(z, "cross")
        assert list(z["tau/names"]) == [*layers, "rollout", "flow"] == list(expected)
    else:  # an RNN has one cross attention and no self-attention to roll out
        expected = {n: torch.from_numpy(z[n]).mean(0)[t] for n in layers}
        assert list(z["tau/names"]) == ["cross/layer1"]
    np.testing.assert_array_equal(z["tau/rows"], torch.stack(list(expected.values())).numpy())
    for method in ("ixg", "ig"):
        attr = torch.from_numpy(z[f"attr/{method}"]).abs()
        np.testing.assert_array_equal(z[f"tau/{method}"], [kendall_tau(r, attr) for r in expected.values()])

    a = page_record(open_source(folder), TEXT, options)["attribution"]
    assert a["output"] == str(z["attr/output"][0]) and a["row"] == t and a["tokens"] == list(z["tokens"])
    assert a["compared"]["names"] == list(z["tau/names"])
    np.testing.assert_allclose(a["scores"]["ig"], z["attr/ig"], rtol=1e-6)
    assert a["tau"]["ig"] == [None if math.isnan(x) else x for x in z["tau/ig"].tolist()]


@pytest.mark.parametrize("beam", [[], ["--beam", "1"]])
def test_report_of_a_run_embeds_the_attribution_of_the_output_it_shows(tiny_transformer_run, tmp_path, beam):
    out = tmp_path / "page.html"
    assert main(["report", str(tiny_transformer_run), TEXT, "--attribute", "ig", "--attribute-target", "1", *beam, "--out", str(out)]) == 0
    (record,) = json.loads(DATA.search(out.read_text(encoding="utf-8")).group(1))
    a = record["attribution"]
    assert set(a["scores"]) == {"ig"} and a["row"] == 1 and a["compared"]["names"] == ["cross/layer1", "cross/layer2", "rollout"]
    assert a["output"] == f"output 1 {record['tgt'][1]!r}" and a["tokens"] == record["src"] and a["ig"]["relative_error"] <= 0.01


def test_a_run_refuses_an_output_past_its_end_and_words_in_one_line(tiny_transformer_run, tmp_path, capsys):
    args = ["attention", str(tiny_transformer_run), TEXT, "--out", str(tmp_path / "a.npz"), "--attribute", "ig"]
    assert main([*args, "--attribute-target", "99"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--attribute-target 99: the output has" in err
    assert main([*args, "--words"]) == 2
    assert "leave out --words" in capsys.readouterr().err
    assert not (tmp_path / "a.npz").exists()


def test_an_output_of_every_query_row_is_compared_with_their_mean():
    """A classifier's hops (one output read by every hop): the compared row is the hops' mean."""
    collector = Collector(Discard(), output=("hops", None))
    hops = torch.tensor([[[0.5, 0.3, 0.2], [0.1, 0.1, 0.8]]])  # (1, R, n)
    collector("hops", hops)
    collector.finish()
    torch.testing.assert_close(collector.compared["hops/layer1"], torch.tensor([0.3, 0.2, 0.5]))


def test_a_family_without_a_score_refuses_attribute_in_one_line(tmp_path):
    from dataclasses import replace

    from attnkit.errors import AttnkitError
    from attnkit.families.translation import FAMILY
    from attnkit.sources.run import _check

    with pytest.raises(AttnkitError, match=r"^run: --attribute: a translation run gives no score to attribute"):
        _check("run", replace(FAMILY, attribution=None), AttentionOptions(attribute=("ig",)))
    _check("run", FAMILY, AttentionOptions(attribute=("ig",)))  # the translation family scores its outputs


def test_a_lines_outputs_share_one_search_and_a_changed_model_searches_again(tiny_transformer_run, monkeypatch):
    """faithfulness scores every output of a line in turn: one beam search per line, not one per output; a weight
    changed in place (a head mask, a load) or other decoding settings decode again."""
    from attnkit.families.translation import attribute

    loaded = load_run(tiny_transformer_run)
    calls = []
    real = attribute.translate
    monkeypatch.setattr(attribute, "translate", lambda *a, **k: calls.append(a[2]) or real(*a, **k))
    for t in range(3):
        attribute.score_function(loaded, "t1 t2 t3", t)
    assert len(calls) == 1
    attribute.score_function(loaded, "t3 t2", 0)
    assert len(calls) == 2
    with torch.no_grad():
        next(loaded.model.parameters()).mul_(1.0)
    attribute.score_function(loaded, "t3 t2", 0)
    assert len(calls) == 3
