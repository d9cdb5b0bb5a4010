"""`attnkit heads RUN --input FILE`: JSON and grid plots from a tiny run, and its one-line errors."""

import json
import shutil
from pathlib import Path

import torch
import yaml

from attnkit.cli import main
from attnkit.families import load_run
from attnkit.sources import AttentionOptions
from attnkit.sources.record import explain_inputs
from attnkit.sources.source import RunSource


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
    src.write_text("t1 t2\n", encoding="utf-8")  # two words, two hops: the hops map is square, and still no self-attention
    assert main(["heads", str(tiny_sase_run), "--input", str(src), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("attnkit: error: ") and "tiny-sase" in err and "no self-attention" in err


def test_heads_selects_maps_by_kind_not_by_shape(tiny_transformer_run, tmp_path, capsys):
    """Cut at 4 steps, the output of three words (and </s>) is as long as the source: cross attention is square, as
    the self-attention kinds are, and still not one of them."""
    run = Path(shutil.copytree(tiny_transformer_run, tmp_path / "square"))
    config = yaml.safe_load((run / "config.yaml").read_text(encoding="utf-8"))
    config["decode"].update(max_len_a=0.0, max_len_b=4)
    (run / "config.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    lines = ["t1 t2 t3", "t4 t5 t6", "t7 t8 t9"]
    loaded = load_run(run)
    for record in explain_inputs(RunSource(loaded), lines, AttentionOptions(beam=1, nbest=1)):
        shapes = {v.kind: tuple(v.layers[0].shape) for v in record.views}
        assert shapes["cross"] == shapes["encoder"] == shapes["decoder_self"]  # (H, S, S): one shape for the three kinds
    src = tmp_path / "src.txt"
    src.write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert main(["heads", str(run), "--input", str(src), "--out", str(tmp_path / "heads")]) == 0
    doc = json.loads((tmp_path / "heads" / "heads.json").read_text(encoding="utf-8"))
    assert set(doc["kinds"]) == {"encoder", "decoder_self"} and "3 sentences" in capsys.readouterr().out
    assert sorted(p.name for p in (tmp_path / "heads").glob("*.png")) == ["heads-decoder_self.png", "heads-encoder.png"]
