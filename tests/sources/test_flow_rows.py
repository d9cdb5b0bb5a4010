"""Attention flow in the commands and pages: `--flow` computes the explained output's row alone (a
classifier's first token, a language model's last position), `--flow all` every row, with a progress
bar over the rows when there is more than one; `flow/rows` says which rows `flow` holds."""

from __future__ import annotations

import base64
import json
import re
from contextlib import contextmanager
from types import SimpleNamespace

import numpy as np
import pytest
import torch
from hf_tiny import TEXT

from attnkit.analysis.flow import attention_flow
from attnkit.cli import main
from attnkit.errors import AttnkitError
from attnkit.sources import AttentionOptions, export_attention

pytest.importorskip("scipy")
DATA = re.compile(r'id="attention-data">(.*?)</script>', re.S)


def self_layers(z, kind: str) -> list[torch.Tensor]:
    n = sum(1 for name in z.files if name.startswith(f"{kind}/layer"))
    return [torch.from_numpy(z[f"{kind}/layer{l}"]) for l in range(1, n + 1)]  # (H, T, T) each


@pytest.fixture
def bars(monkeypatch) -> list[SimpleNamespace]:
    """Every progress bar `attnkit.progress.counter` opens: its total, description, unit and the rows counted (`n`)."""
    import attnkit.progress

    opened = []

    @contextmanager
    def recording(total: int, desc: str, unit: str = "it"):
        bar = SimpleNamespace(total=total, desc=desc, unit=unit, n=0)
        bar.update = lambda n=1: setattr(bar, "n", bar.n + n)
        opened.append(bar)
        yield bar

    monkeypatch.setattr(attnkit.progress, "counter", recording)
    return opened


@pytest.mark.parametrize(("name", "kind"), [("bert", "encoder"), ("llama", "self")])
def test_flow_is_the_explained_row_by_default_and_every_row_with_all(hf_folder, tmp_path, bars, name, kind):
    folder = str(hf_folder(name))
    export_attention(folder, TEXT, tmp_path / "one.npz", AttentionOptions(flow=True))
    z = np.load(tmp_path / "one.npz")
    T = len(z["tokens"])
    explained = 0 if kind == "encoder" else T - 1  # [CLS]; the position that predicts the next token
    assert z["flow"].shape == (1, T) and list(z["flow/rows"]) == [explained]
    assert bars == []  # one row: no bar
    every = attention_flow(self_layers(z, kind))  # (T, T)
    np.testing.assert_allclose(z["flow"][0], every[explained].numpy(), atol=1e-6)

    export_attention(folder, TEXT, tmp_path / "all.npz", AttentionOptions(flow="all"))
    z = np.load(tmp_path / "all.npz")
    assert z["flow"].shape == (T, T) and list(z["flow/rows"]) == list(range(T))
    np.testing.assert_allclose(z["flow"], every.numpy(), atol=1e-6)
    assert [(b.total, b.desc, b.unit, b.n) for b in bars] == [(T, "attention flow", "row", T)]


def test_the_cli_and_the_page_take_flow_with_and_without_all(hf_folder, tmp_path, capsys):
    folder = str(hf_folder("bert"))
    assert main(["attention", folder, TEXT, "--flow", "--out", str(tmp_path / "a.npz")]) == 0
    assert np.load(tmp_path / "a.npz")["flow"].shape == (1, 11)
    assert main(["attention", folder, TEXT, "--flow", "all", "--out", str(tmp_path / "b.npz")]) == 0
    assert np.load(tmp_path / "b.npz")["flow"].shape == (11, 11)
    assert main(["attention", folder, TEXT, "--flow", "some", "--out", str(tmp_path / "c.npz")]) == 2
    assert "invalid choice: 'some'" in capsys.readouterr().err

    for flow, rows in (([], ["[CLS]"]), (["all"], None)):
        out = tmp_path / "page.html"
        assert main(["report", folder, TEXT, "--flow", *flow, "--out", str(out)]) == 0
        (record,) = json.loads(DATA.search(out.read_text(encoding="utf-8")).group(1))
        maps = record["maps"]
        assert maps["flow"]["rows"] == (rows or maps["encoder"]["rows"]) and maps["flow"]["cols"] == maps["encoder"]["cols"]
        assert len(base64.b64decode(maps["flow"]["data"][0][0])) == len(maps["flow"]["rows"]) * 11  # one layer, one head: Q x T bytes


def test_flow_options_are_checked():
    assert AttentionOptions(flow=True).flow == "explained" and AttentionOptions(flow=False).flow is None
    assert AttentionOptions(flow="all").flow == "all" and AttentionOptions().flow is None
    with pytest.raises(AttnkitError, match=r"^flow 'every': give one of explained, all \(or true: explained\)$"):
        AttentionOptions(flow="every")


def test_the_attention_page_asks_for_the_explained_row_or_every_row(hf_folder):
    pytest.importorskip("fastapi")
    from fastapi.testclient import TestClient

    from attnkit.serve.app import create_app
    from attnkit.sources import open_source

    with TestClient(create_app({}, hf={"bert": open_source(str(hf_folder("bert")))})) as client:
        for flow, rows in ((True, 1), ("explained", 1), ("all", 11)):
            response = client.post("/v1/attention", json={"model": "bert", "text": TEXT, "flow": flow})
            assert response.status_code == 200, response.text
            assert len(response.json()["record"]["maps"]["flow"]["rows"]) == rows
        assert "flow" not in client.post("/v1/attention", json={"model": "bert", "text": TEXT}).json()["record"]["maps"]
        assert client.post("/v1/attention", json={"model": "bert", "text": TEXT, "flow": "every"}).status_code == 422
