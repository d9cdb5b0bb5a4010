"""`attnkit attention MODEL --long` from the command line: a document from a file or stdin, the npz it writes
(equal to eager where checked), and the one-line refusals (too long, over the memory budget, bad rows)."""

from __future__ import annotations

import io
import json
import sys
from dataclasses import replace

import numpy as np
import pytest
import torch
from hf_tiny import transformers

from attnkit.cli import main
from attnkit.errors import AttnkitError

DOCUMENT = "the cats sat on the mat . a dog ran and sat .\nhello world , the cat sat ."  # 19 tokens; the tiny llama takes 32


def _error(capsys, *argv: str) -> str:
    assert main(["attention", *argv]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1, lines
    return lines[0]


def _eager(folder, text: str) -> tuple[list[torch.Tensor], list[str]]:
    tokenizer = transformers.AutoTokenizer.from_pretrained(folder)
    ids = tokenizer(text, return_tensors="pt")["input_ids"]
    model = transformers.LlamaForCausalLM.from_pretrained(folder, attn_implementation="eager").eval()
    with torch.inference_mode():
        attentions = model(input_ids=ids, output_attentions=True).attentions
    return [a[0] for a in attentions], tokenizer.convert_ids_to_tokens(ids[0].tolist())


def test_document_file(hf_folder, tmp_path, capsys):
    folder = hf_folder("llama")
    doc = tmp_path / "doc.txt"
    doc.write_text(DOCUMENT, encoding="utf-8")
    out = tmp_path / "long.npz"
    assert main(["attention", str(folder), "--document", str(doc), "--long", "--rows", "-1", "2:4", "--max-new-tokens", "3", "--out", str(out)]) == 0
    summary = json.loads(capsys.readouterr().out)
    reference, tokens = _eager(folder, DOCUMENT)
    assert summary["tokens"] == len(tokens) and summary["layers"] == 2 and summary["rollout"]
    z = np.load(out)
    assert list(z["tokens"]) == tokens and list(z["layers"]) == [1, 2]
    assert list(z["rows"]) == [2, 3, len(tokens) - 1]
    for l, a in enumerate(reference, 1):
        np.testing.assert_allclose(z[f"rows/layer{l}"], a[:, z["rows"]].numpy(), atol=1e-5, rtol=0)
        np.testing.assert_allclose(z[f"sink/layer{l}"], a[..., 0].numpy(), atol=1e-5, rtol=0)
        assert z[f"pooled64/layer{l}"].shape == (4, 1, 1) and z[f"pooled64_without_sink/layer{l}"].shape == (4, 1, 1)
    np.testing.assert_allclose(z["sink"], np.stack([a[..., 0].mean(-1).numpy() for a in reference]), atol=1e-5, rtol=0)
    assert z["rollout_rows"].shape == (3, len(tokens)) and int(z["window"]) == 64
    k = summary["generated"]
    assert 1 <= k <= 3 and z["generated/layer2"].shape == (4, k, len(tokens) + k - 1) and len(z["generated_tokens"]) == k


def test_document_from_stdin_rows_only(hf_folder, tmp_path, capsys, monkeypatch):
    folder = hf_folder("llama")
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(DOCUMENT.encode())))
    out = tmp_path / "rows.npz"
    argv = ["attention", str(folder), "--document", "-", "--long", "rows", "--rows", "5", "--layers", "2", "--heads", "1", "--out", str(out)]
    assert main(argv) == 0
    z = np.load(out)
    reference, _ = _eager(folder, DOCUMENT)
    assert list(z["layers"]) == [2] and "sink" not in z.files and "rollout_rows" not in z.files
    np.testing.assert_allclose(z["rows/layer2"], reference[1][[1]][:, [5]].numpy(), atol=1e-5, rtol=0)


def test_document_on_the_eager_road(hf_folder, tmp_path, capsys):
    doc = tmp_path / "doc.txt"
    doc.write_text(DOCUMENT, encoding="utf-8")
    assert main(["attention", str(hf_folder("llama")), "--document", str(doc), "--out", str(tmp_path / "a.npz")]) == 0
    assert np.load(tmp_path / "a.npz")["self/layer1"].shape[1] == json.loads(capsys.readouterr().out)["tokens"]


def test_refusals_are_one_line(hf_folder, tmp_path, capsys):
    folder = str(hf_folder("llama"))
    out = str(tmp_path / "x.npz")
    long_doc = tmp_path / "long.txt"
    long_doc.write_text(DOCUMENT * 3, encoding="utf-8")
    assert "tokens, the model takes at most 32" in _error(capsys, folder, "--document", str(long_doc), "--long", "--out", out)
    line = _error(capsys, folder, "the cat sat", "--long", "--max-memory", "1K", "--out", out)
    assert "over the budget of 0.0 MiB (--max-memory); what fits: nothing: the forward pass alone needs" in line
    assert "--rows 99: the input has" in _error(capsys, folder, "the cat sat", "--long", "--rows", "99", "--out", out)
    assert "--layers 3: the model has layers 1 to 2" in _error(capsys, folder, "the cat sat", "--long", "--layers", "3", "--out", out)
    assert "not both" in _error(capsys, folder, "the cat", "--document", str(long_doc), "--out", out)
    assert "no-such.txt: cannot read the document" in _error(capsys, folder, "--document", str(tmp_path / "no-such.txt"), "--out", out)
    line = _error(capsys, folder, "the cat sat", "--max-memory", "1K", "--out", out)
    assert "the full maps of 4 tokens need about" in line and "--long takes the input without them" in line
    assert "--long reads decoder (causal language) models; this one is encoder" in _error(capsys, str(hf_folder("bert")), "a", "--long", "--out", out)
    assert "go with --long" in _error(capsys, folder, "the cat", "--rows", "1", "--out", out)
    assert not (tmp_path / "x.npz").exists()


def test_memory_guard_spills_then_names_what_fits(hf_folder, tmp_path):
    from attnkit.sources.hf.load import load
    from attnkit.sources.hf.long.budget import Plan, check, estimate, shape_of

    shape = shape_of(load(str(hf_folder("llama"))).model)
    plan = Plan(layers=2, rows=1, row_heads=4)
    in_memory, spilled = estimate(shape, 4096, plan), estimate(shape, 4096, plan, spill=True)
    assert spilled.kept == in_memory.kept // 2 and spilled.spilled == in_memory.kept
    assert check("tiny", shape, 4096, plan, in_memory.memory) == in_memory  # fits: nothing on disk
    assert check("tiny", shape, 4096, plan, in_memory.memory - 1) == spilled  # one layer's queries and keys in memory
    rows = estimate(shape, 4096, replace(plan, rows_only=True), spill=True).memory
    with pytest.raises(AttnkitError, match=r"what fits: --long rows \("):
        check("tiny", shape, 4096, plan, spilled.memory - 1)
    with pytest.raises(AttnkitError, match="what fits: nothing: the forward pass alone needs"):
        check("tiny", shape, 4096, plan, rows - 1)
