"""`attnkit attention MODEL --long` from the command line: a document from a file or stdin through a decoder or an
encoder, the npz it writes (equal to eager where checked), and the one-line refusals (too long, over the memory
budget, bad rows, a model whose attention cannot be captured)."""

from __future__ import annotations

import io
import json
import sys
from dataclasses import replace

import numpy as np
import pytest
import torch
from hf_tiny import transformers

from attnkit.analysis.rollout import rollout
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
    model = transformers.AutoModel.from_pretrained(folder, attn_implementation="eager").eval()
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
    assert summary["model"] == str(folder)  # the model as given, as the eager road's summary names it
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
    assert "--long reads decoder (causal language) and encoder (BERT-like) models; this one is an encoder-decoder model" in _error(
        capsys, str(hf_folder("marian")), "a", "--long", "--out", out
    )
    assert "go with --long" in _error(capsys, folder, "the cat", "--rows", "1", "--out", out)
    assert not (tmp_path / "x.npz").exists()


def test_a_bad_document_is_one_line_naming_its_line_and_column(hf_folder, tmp_path, capsys, monkeypatch):
    folder, out = str(hf_folder("llama")), str(tmp_path / "x.npz")
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"\xef\xbb\xbfthe cats\nsat \xffon\n")  # a BOM, then a bad byte on line 2
    assert _error(capsys, folder, "--document", str(bad), "--long", "--out", out) == f"attnkit: error: {bad}, line 2: invalid UTF-8 (byte 0xff at column 5)"
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"\xc3\x28 the cat")))
    assert _error(capsys, folder, "--document", "-", "--long", "--out", out) == "attnkit: error: <stdin>, line 1: invalid UTF-8 (byte 0xc3 at column 1)"
    blank = tmp_path / "blank.txt"
    blank.write_text("\n \n", encoding="utf-8")
    assert _error(capsys, folder, "--document", str(blank), "--long", "--out", out) == f"attnkit: error: {blank}: the document is empty"
    assert not (tmp_path / "x.npz").exists()


def test_encoder_document(hf_folder, tmp_path, capsys):
    """A BERT reads the document both ways: the rows default to [CLS]'s, every summary counts keys on either side."""
    folder = hf_folder("bert")
    doc = tmp_path / "doc.txt"
    doc.write_text(DOCUMENT, encoding="utf-8")
    out = tmp_path / "bert.npz"
    assert main(["attention", str(folder), "--document", str(doc), "--long", "--out", str(out)]) == 0
    summary = json.loads(capsys.readouterr().out)
    reference, tokens = _eager(folder, DOCUMENT)
    n = len(tokens)
    assert summary["tokens"] == n and summary["rollout"] and tokens[0] == "[CLS]" and tokens[-1] == "[SEP]"
    z = np.load(out)
    assert list(z["tokens"]) == tokens and list(z["rows"]) == [0]
    distance = (torch.arange(n)[:, None] - torch.arange(n)[None, :]).abs().float()  # (N, N): |q - k|
    for l, a in enumerate(reference, 1):
        assert (a[:, 0, 1:].sum(-1) > 0.5).all()  # [CLS] attends mostly to the keys after it
        np.testing.assert_allclose(z[f"rows/layer{l}"], a[:, [0]].numpy(), atol=1e-5, rtol=0)
        np.testing.assert_allclose(z[f"sink/layer{l}"], a[..., 0].numpy(), atol=1e-5, rtol=0)
        np.testing.assert_allclose(z[f"distance/layer{l}"], (a * distance).sum(-1).numpy(), atol=1e-4, rtol=0)
    np.testing.assert_allclose(z["rollout_rows"], rollout(reference)[[0]].numpy(), atol=1e-5, rtol=0)


def test_encoder_refusals_are_one_line(hf_folder, tmp_path, capsys, monkeypatch):
    bert, out = str(hf_folder("bert")), str(tmp_path / "x.npz")
    long_doc = tmp_path / "long.txt"
    long_doc.write_text(DOCUMENT * 3, encoding="utf-8")
    assert "the text is 71 tokens, the model takes at most 32 (--truncate cuts it)" in _error(capsys, bert, "--document", str(long_doc), "--long", "--out", out)
    assert "--max-new-tokens generates with a decoder; this one is an encoder" in _error(
        capsys, bert, "the cat", "--long", "--max-new-tokens", "2", "--out", out
    )
    # RoBERTa's 40 positions count from after its pad's: 39 tokens
    assert "the text is 40 tokens, the model takes at most 39" in _error(capsys, str(hf_folder("roberta")), "the " * 38, "--long", "--out", out)
    deberta = str(hf_folder("deberta"))  # refused before its forward pass (eager, N x N)
    monkeypatch.setattr(transformers.DebertaV2Model, "forward", lambda *a, **k: pytest.fail("the forward pass ran"))
    line = _error(capsys, deberta, "the cat", "--long", "--out", out)
    assert line.endswith(f"{deberta}: its attention does not go through transformers' attention interface (eager only): leave out --long")
    assert not (tmp_path / "x.npz").exists()


def test_encoder_truncated(hf_folder, tmp_path, capsys):
    doc = tmp_path / "long.txt"
    doc.write_text(DOCUMENT * 3, encoding="utf-8")
    out = tmp_path / "cut.npz"
    assert main(["attention", str(hf_folder("bert")), "--document", str(doc), "--long", "rows", "--truncate", "--out", str(out)]) == 0
    assert json.loads(capsys.readouterr().out)["tokens"] == 32
    z = np.load(out)
    assert z["tokens"][-1] == "[SEP]" and z["rows/layer1"].shape == (4, 1, 32)


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
