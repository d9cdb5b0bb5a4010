"""Attributions beside attention, rollout and flow (`sources.agreement`): the npz's `tau/<method>` is
Kendall's tau-b (`analysis.correlation`) of |attr/<method>| with each layer's head-mean row, the rollout
row and the flow row of the attributed output, recomputed here from the npz's own arrays; the page
record carries the same attributions, rows and taus, the report embeds them and the card draws them."""

from __future__ import annotations

import json
import math
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
import torch
from hf_tiny import TEXT

from attnkit.analysis.correlation import kendall_tau
from attnkit.analysis.rollout import head_mean
from attnkit.cli import main
from attnkit.sources import AttentionOptions, export_attention, open_source
from attnkit.sources.page import page_record
from attnkit.viz.report import embed_json, shared_script

pytest.importorskip("captum")
DATA = re.compile(r'id="attention-data">(.*?)</script>', re.S)
STUB = Path(__file__).resolve().parents[1] / "viz" / "dom_stub.js"
METHODS = ("ixg", "ig")
# (model, the kind the output reads, its query row (-1: the last), --attribute-target, --words)
CASES = [("bert", "encoder", 0, None, False), ("bert", "encoder", 0, None, True), ("llama", "self", -1, None, False), ("marian", "cross", 1, 1, False)]


def expected_rows(z, kind: str) -> dict[str, torch.Tensor]:
    """The attributed output's row of each `kind` layer (head mean), of rollout and of flow (an encoder-decoder
    model: the last cross layer's row composed with the encoder's flow), from the npz's arrays."""
    row = int(z["attr/row"])
    layers = sorted((n for n in z.files if n.startswith(f"{kind}/layer")), key=lambda n: int(n.removeprefix(f"{kind}/layer")))
    rows = {n: head_mean(torch.from_numpy(z[n]))[row] for n in layers}  # (S,) each
    rows["rollout"] = torch.from_numpy(z["rollout"])[row]  # (S,)
    flow = torch.from_numpy(z["flow"])  # (Q, S): the query rows flow/rows; the explained row alone, or all S for c_t F_enc
    assert list(z["flow/rows"]) == (list(range(len(z["tokens"]))) if kind == "cross" else [row])
    rows["flow"] = rows[layers[-1]] @ flow if kind == "cross" else flow[0]  # (S,)
    return rows


def options_for(name: str, output: int | None, words: bool) -> AttentionOptions:
    return AttentionOptions(attribute=METHODS, flow=True, output=output, words=words, target="a dog ." if name == "marian" else None)


@pytest.mark.parametrize(("name", "kind", "row", "output", "words"), CASES)
def test_tau_is_kendall_tau_of_the_npz_arrays_and_the_page_carries_it(hf_folder, tmp_path, name, kind, row, output, words):
    folder, options = str(hf_folder(name)), options_for(name, output, words)
    export_attention(folder, TEXT, tmp_path / "a.npz", options)
    z = np.load(tmp_path / "a.npz")
    assert int(z["attr/row"]) == (row if row >= 0 else len(z[f"{kind}/queries"]) - 1)
    expected = expected_rows(z, kind)
    assert list(z["tau/names"]) == [f"{kind}/layer1", f"{kind}/layer2", "rollout", "flow"] == list(expected)
    assert z["tau/rows"].shape == (4, len(z["tokens"]))
    np.testing.assert_array_equal(z["tau/rows"], torch.stack(list(expected.values())).numpy())
    for method in METHODS:
        attr = torch.from_numpy(z[f"attr/{method}"]).abs()
        np.testing.assert_array_equal(z[f"tau/{method}"], [kendall_tau(r, attr) for r in expected.values()])
    assert not np.isnan(z["tau/ig"]).all()

    a = page_record(open_source(folder), TEXT, options)["attribution"]
    assert a["output"] == str(z["attr/output"][0]) and a["row"] == int(z["attr/row"]) and a["tokens"] == list(z["tokens"])
    assert a["ig"]["relative_error"] <= 0.01 and a["ig"]["steps"] == int(z["attr/ig_steps"])
    assert a["compared"]["names"] == list(z["tau/names"])
    np.testing.assert_allclose(a["compared"]["rows"], z["tau/rows"], rtol=1e-6)
    for method in METHODS:
        np.testing.assert_allclose(a["scores"][method], z[f"attr/{method}"], rtol=1e-6)
        assert a["tau"][method] == [None if math.isnan(t) else t for t in z[f"tau/{method}"].tolist()]


def test_report_embeds_the_attribution(hf_folder, tmp_path):
    out, folder = tmp_path / "page.html", str(hf_folder("bert"))
    assert main(["report", folder, TEXT, "--attribute", "ig", "--flow", "--out", str(out)]) == 0
    (record,) = json.loads(DATA.search(out.read_text(encoding="utf-8")).group(1))
    export_attention(folder, TEXT, tmp_path / "a.npz", AttentionOptions(attribute=("ig",), flow=True))
    z = np.load(tmp_path / "a.npz")
    assert set(record["attribution"]["scores"]) == {"ig"} and record["attribution"]["compared"]["names"] == list(z["tau/names"])
    assert record["attribution"]["tau"]["ig"] == [None if math.isnan(t) else t for t in z["tau/ig"].tolist()]
    assert "maps" in record and "attribution" not in page_record(open_source(folder), TEXT)  # only when asked


@pytest.mark.skipif(shutil.which("node") is None, reason="node is absent")
def test_the_card_draws_the_attribution_view_and_the_tau_table():
    attribution = {"output": "class 1 (pos)", "row": 0, "tokens": ["[CLS]", "good", "[SEP]"], "scores": {"ig": [0.1, -0.7, 0.2]},
                   "ig": {"steps": 50, "relative_error": 0.001}, "compared": {"names": ["encoder/layer1", "rollout"], "rows": [[0.5, 0.3, 0.2], [0.4, 0.4, 0.2]]},
                   "tau": {"ig": [0.333, None]}}  # fmt: skip
    one = {"rows": ["a"], "cols": ["a"], "layers": [[[[1.0]]]]}
    maps = {"encoder": {"title": "encoder self-attention", **one}, "rollout": {"title": "attention rollout", **one}}  # titles: `viz.records`
    record = {"source": "good", "text": "class: pos", "maps": maps, "attribution": attribution}
    draw = f"AttnView.render(document.body, {embed_json(record)}); console.log(summarise(document.body));"
    script = "\n".join([STUB.read_text(encoding="utf-8"), shared_script(), draw])
    out = subprocess.run([shutil.which("node"), "-e", script], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    shown = json.loads(out.stdout)
    assert {"attn-attribution", "attn-attr-method", "attn-attr-compared", "attn-tau", "attn-tau-value", "attn-heatmap"} <= set(shown["classes"])
    texts = ("attributions of class 1 (pos)", "integrated gradients", "encoder self-attention, layer 1 (head mean)", "attention rollout", "0.333")
    for text in (*texts, "\u2014"):  # a tau that is undefined (NaN in the npz, null on the page): a dash
        assert text in shown["text"], text
