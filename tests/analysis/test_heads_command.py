"""`attnkit heads RUN --input FILE`: JSON and grid plots from a tiny run, and its one-line errors."""

import json

import torch

from attnkit.cli import main


def test_heads_writes_json_and_a_grid_per_self_attention_kind(tiny_transformer_run, tmp_path, capsys):
    src = tmp_path / "src.txt"
    src.write_text("t1 t2 t3\nt4 t5\n\nt6 t7 t8 t9\n", encoding="utf-8")
    out = tmp_path / "heads"
    assert main(["heads", str(tiny_transformer_run), "--input", str(src), "--out", str(out)]) == 0
    assert "3 sentences" in capsys.readouterr().out
    doc = json.loads((out / "heads.json").read_text(encoding="utf-8"))
    assert set(doc["kinds"]) == {"encoder", "decoder_self"}
    enc = doc["kinds"]["encoder"]
    assert enc["sentences"] == 3 and enc["separators"] == ["</s>", "[SEP]"]
    # Source pieces end with </s>: 3 sentences of 4, 3 and 5 positions.
    assert enc["queries"] == 4 + 3 + 5
    L, H = enc["layers"], enc["heads"]
    for name, grid in enc["stats"].items():
        values = torch.tensor(grid)
        assert values.shape == (L, H), name
        assert torch.all(values >= 0), name
    shares = torch.tensor(enc["stats"]["previous"]) + torch.tensor(enc["stats"]["next"])
    assert torch.all(shares <= 1.0 + 1e-6)
    for kind in ("encoder", "decoder_self"):
        assert (out / f"heads-{kind}.png").read_bytes()[:4] == b"\x89PNG"


def test_heads_errors_are_one_line(tiny_transformer_run, tiny_sase_run, tmp_path, capsys):
    empty = tmp_path / "empty.txt"
    empty.write_text("\n", encoding="utf-8")
    assert main(["heads", str(tiny_transformer_run), "--input", str(empty), "--out", str(tmp_path / "o")]) == 2
    assert capsys.readouterr().err.strip().endswith("empty.txt: no sentences")
    src = tmp_path / "s.txt"
    src.write_text("t1 t2\n", encoding="utf-8")
    assert main(["heads", str(tiny_sase_run), "--input", str(src), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err  # the classifier has no per-position views for `plot` either: its family says so
    assert err.count("\n") == 1 and err.startswith("attnkit: error: ") and "tiny-sase" in err
