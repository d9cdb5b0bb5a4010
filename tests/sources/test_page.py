"""The explorer page of a Hugging Face model or an attnkit run (`sources.page`): its maps are the npz's
maps in bytes, the cap on its size, `report`, `plot --view`, `attnkit.show` and a notebook."""

from __future__ import annotations

import base64
import json
import re

import numpy as np
import pytest
from hf_tiny import TEXT

import attnkit
from attnkit.cli import main
from attnkit.errors import AttnkitError
from attnkit.sources import AttentionOptions, export_attention, open_source
from attnkit.sources.page import page_record

DATA = re.compile(r'id="attention-data">(.*?)</script>', re.S)


def decoded(entry: dict) -> np.ndarray:
    """A page map's bytes back to weights (L, H, Tq, Tk)."""
    Tq, Tk = len(entry["rows"]), len(entry["cols"])
    data = np.array([[np.frombuffer(base64.b64decode(m), np.uint8).reshape(Tq, Tk) for m in layer] for layer in entry["data"]], np.float64)
    return data / 255 * np.array(entry["scale"])[..., None, None]


@pytest.mark.parametrize(("name", "kinds"), [("bert", {"encoder"}), ("gpt2", {"self"}), ("marian", {"encoder", "decoder_self", "cross"})])
def test_page_maps_are_the_npz_maps_to_a_byte(hf_folder, tmp_path, name, kinds):
    folder = str(hf_folder(name))
    options = AttentionOptions(target="the dog sat ." if name == "marian" else None)
    export_attention(folder, TEXT, tmp_path / "a.npz", options)
    z = np.load(tmp_path / "a.npz")
    record = page_record(open_source(folder), TEXT, options)
    assert set(record["maps"]) == kinds | {"rollout"} | ({"rollout_encoder"} if name == "marian" else set())
    assert record["source"] == TEXT and record["text"]  # a class, the next token, or the output
    for kind in kinds | {"rollout"}:
        entry, got = record["maps"][kind], decoded(record["maps"][kind])
        expected = np.stack([z[f"{kind}/layer{l}"] for l in range(1, len(entry["data"]) + 1)]) if kind != "rollout" else z["rollout"][None, None]
        assert got.shape == expected.shape
        assert np.abs(got - expected).max() <= expected.max() / 255 / 2 + 1e-6  # one byte per weight, on the map's own scale
        if kind != "rollout":
            assert entry["rows"] == list(z[f"{kind}/queries"]) and entry["cols"] == list(z[f"{kind}/keys"])


def test_a_run_gives_the_same_page_maps(tiny_transformer_run):
    record = page_record(open_source(str(tiny_transformer_run)), "t1 t2 t3")
    assert {"encoder", "decoder_self", "cross", "rollout"} <= set(record["maps"])
    assert decoded(record["maps"]["cross"]).shape[:2] == (2, 2)


def test_a_page_over_the_cap_is_refused_in_one_line(hf_folder):
    with pytest.raises(AttnkitError, match=r"bert: the page would hold more than 100 attention weights \(a shorter input, --max-cells"):
        page_record(open_source(str(hf_folder("bert"))), TEXT, max_cells=100)


def test_report_of_a_hugging_face_model(hf_folder, tmp_path, capsys):
    out = tmp_path / "page.html"
    assert main(["report", str(hf_folder("bert")), TEXT, "--out", str(out)]) == 0
    html = out.read_text(encoding="utf-8")
    (record,) = json.loads(DATA.search(html).group(1))
    assert record["source"] == TEXT and "encoder" in record["maps"] and "const AttnDraw" in html
    assert main(["report", str(hf_folder("bert")), TEXT, "--out", str(out), "--beam", "2"]) != 0
    assert "--beam is for attnkit runs" in capsys.readouterr().err


@pytest.mark.parametrize("view", ["heatmap", "head", "model"])
def test_plot_a_view_as_png_and_svg(hf_folder, tmp_path, view):
    folder = str(hf_folder("marian"))
    for suffix, magic in ((".png", b"\x89PNG"), (".svg", b"<svg")):
        out = tmp_path / f"{view}{suffix}"
        assert main(["plot", folder, TEXT, "--view", view, "--layer", "1", "--out", str(out)]) == 0
        assert magic in out.read_bytes()[:400]


def test_plot_refuses_a_layer_the_model_lacks(hf_folder, tmp_path, capsys):
    assert main(["plot", str(hf_folder("bert")), TEXT, "--view", "heatmap", "--layer", "3", "--out", str(tmp_path / "x.png")]) != 0
    assert "this map has layers 1-2 and heads 1-4" in capsys.readouterr().err


def test_show_is_the_page_in_an_iframe(hf_folder):
    shown = attnkit.show(str(hf_folder("gpt2")), TEXT, height=500)
    frame = shown._repr_html_()
    assert frame.startswith('<iframe srcdoc="&lt;!DOCTYPE html&gt;') and "height: 500px" in frame
    assert "const AttnDraw" in shown.html and shown.record["maps"]["self"]["rows"][0] == "the"


@pytest.mark.slow
def test_a_notebook_shows_the_page(hf_folder, tmp_path):
    nbformat = pytest.importorskip("nbformat", reason="nbformat is not installed (pip install -e .[dev])")
    nbclient = pytest.importorskip("nbclient", reason="nbclient is not installed (pip install -e .[dev])")
    pytest.importorskip("ipykernel", reason="ipykernel is not installed (pip install -e .[dev])")
    code = f"import attnkit\nattnkit.show({str(hf_folder('bert'))!r}, {TEXT!r})"
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(code)])
    nbclient.NotebookClient(notebook, timeout=300, kernel_name="python3").execute()
    (output,) = [o for o in notebook.cells[0].outputs if o["output_type"] == "execute_result"]  # (stderr may carry warnings)
    html = output["data"]["text/html"]
    assert html.startswith("<iframe srcdoc=") and "attention-data" in html
