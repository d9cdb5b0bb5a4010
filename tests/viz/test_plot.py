"""`attnkit plot`: which PNG files it writes, and that long sentences stay readable."""

from __future__ import annotations

import io
import struct
import sys

from attnkit.cli import main

PNG = b"\x89PNG\r\n\x1a\n"


def png_size(path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == PNG
    return struct.unpack(">II", data[16:24])  # IHDR width, height


def test_transformer_plots_every_layer_head_and_mean(tiny_transformer_run, tmp_path, capsys):
    out = tmp_path / "plots"
    assert main(["plot", str(tiny_transformer_run), "t1 t2 t3", "--out", str(out), "--beam", "1"]) == 0
    # 2 layers x (2 heads + their mean) x 3 kinds of attention, for sentence 0.
    expected = {f"000-{kind}-layer{l}-{head}.png" for kind in ("encoder", "decoder_self", "cross") for l in (1, 2) for head in ("head1", "head2", "mean")}
    assert {p.name for p in out.iterdir()} == expected
    assert capsys.readouterr().out == f"wrote 18 heatmaps to {out}\n"
    assert all(png_size(out / name)[0] > 300 for name in expected)


def test_rnn_plots_cross_attention_readable_at_40_tokens(tiny_rnn_run, tmp_path):
    src = tmp_path / "src.txt"
    long = " ".join(f"t{i % 10}" for i in range(40))
    src.write_text(f"t1 t2\n{long}\n")
    out = tmp_path / "plots"
    assert main(["plot", str(tiny_rnn_run), "--input", str(src), "--out", str(out), "--beam", "1"]) == 0
    assert sorted(p.name for p in out.iterdir()) == ["000-cross-layer1-head1.png", "001-cross-layer1-head1.png"]
    # 41 source columns (+ </s>): at least 30 pixels a token leaves room for an 8-point label each.
    width, height = png_size(out / "001-cross-layer1-head1.png")
    assert width >= 41 * 30 and height >= 41 * 30


def test_plot_errors_are_one_line(tiny_transformer_run, tmp_path, capsys):
    src = tmp_path / "src.txt"
    src.write_text("t1\n")
    assert main(["plot", str(tiny_transformer_run), "t1", "--input", str(src), "--out", str(tmp_path / "p")]) == 2
    assert capsys.readouterr().err == "attnkit: error: give a sentence or --input FILE, not both\n"
    (tmp_path / "file").write_text("")
    assert main(["plot", str(tiny_transformer_run), "t1", "--out", str(tmp_path / "file")]) == 2
    assert capsys.readouterr().err == f"attnkit: error: {tmp_path / 'file'}: exists and is not a folder\n"


def test_a_plot_without_input_is_one_line(tiny_transformer_run, tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"\n \n")))
    assert main(["plot", str(tiny_transformer_run), "--out", str(tmp_path / "maps")]) == 2
    assert capsys.readouterr().err.strip().splitlines() == ["attnkit: error: <stdin>: no input: give a sentence, --input FILE (one a line) or lines on stdin"]
    assert not (tmp_path / "maps").exists()
