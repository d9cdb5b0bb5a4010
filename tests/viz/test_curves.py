"""Training curves: `attnkit plot RUN --metrics` (PNG and SVG, several runs overlaid), what `viz.curves`
reads from a trained run's metrics.jsonl, its one-line errors, and `curves.js` (the report's and the
explorer's charts) in Node with the minimal DOM."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from attnkit.cli import main
from attnkit.families import run_family
from attnkit.viz.curves import read_records, run_curves, valid_points
from attnkit.viz.report import embed_json, template
from benchmark_scripts import load_benchmark

NODE = shutil.which("node")
STUB = (Path(__file__).parent / "dom_stub.js").read_text(encoding="utf-8")


def copy_run(run: Path, folder: Path) -> Path:
    return Path(shutil.copytree(run, folder, ignore=shutil.ignore_patterns("checkpoints")))


def error_line(capsys) -> str:
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "Traceback" not in err
    return err


def test_curves_of_a_trained_run_hold_what_training_logged(tiny_trained_run):
    curves = run_curves(tiny_trained_run, run_family(tiny_trained_run).run_schema.METRICS)
    records = read_records(tiny_trained_run / "metrics.jsonl")
    panels = {p.key: p for p in curves.panels}
    assert list(panels) == ["loss", "lr", "bleu"] and panels["bleu"].label == "BLEU" and panels["lr"].label == "learning rate"
    train, valid = panels["loss"].lines
    assert (train.label, train.step, valid.label, valid.step) == ("train", [1, 2, 3, 4, 5, 6], "valid", [3, 6])
    assert valid.value == [r["loss"] for r in records if r["kind"] == "valid"]
    assert panels["lr"].lines[0].value == [r["lr"] for r in records if r["kind"] == "train"]
    assert [line.label for line in panels["bleu"].lines] == ["valid"]
    assert train.minutes == sorted(train.minutes) and 0 < train.minutes[0] and train.minutes[-1] < valid.minutes[-1]
    assert json.loads(json.dumps(curves.to_json(), allow_nan=False))["name"] == "toy"


def test_plot_metrics_writes_png_and_svg(tiny_trained_run, tmp_path, capsys):
    run = copy_run(tiny_trained_run, tmp_path / "toy")
    assert main(["plot", str(run), "--metrics"]) == 0  # default: RUN/curves.png
    assert capsys.readouterr().out.strip() == f"wrote {run / 'curves.png'}"
    png = (run / "curves.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 20_000
    assert main(["plot", str(run), "--metrics", "--out", str(tmp_path / "c.svg")]) == 0
    svg = (tmp_path / "c.svg").read_text(encoding="utf-8")
    for text in ("loss", "learning rate", "BLEU", "updates", "minutes of training (with validation)", "train", "valid"):
        assert f"<!-- {text} -->" in svg  # matplotlib writes each text as a comment before its glyphs


def test_plot_metrics_overlays_several_runs(tiny_trained_run, tmp_path):
    other = copy_run(tiny_trained_run, tmp_path / "other")
    assert main(["plot", str(tiny_trained_run), str(other), "--metrics", "--out", str(tmp_path / "both.svg")]) == 0
    svg = (tmp_path / "both.svg").read_text(encoding="utf-8")
    assert "<!-- toy train -->" in svg and "<!-- other valid -->" in svg and "<!-- training curves: toy, other -->" in svg


def test_a_run_without_metrics_is_one_line(tiny_transformer_run, tmp_path, capsys):
    assert main(["plot", str(tiny_transformer_run), "--metrics", "--out", str(tmp_path / "c.png")]) == 2
    path = tiny_transformer_run / "metrics.jsonl"
    assert error_line(capsys) == f"attnkit: error: {path}: no metrics yet (training writes a line every train.log_every updates)"
    assert not (tmp_path / "c.png").exists()


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        ('{"kind": "train", "step": 7, "loss": 1.\n', "not JSON (Expecting ',' delimiter at column 39)"),
        ("[1, 2]\n", 'not a metrics record (a JSON object with "kind": "train" or "valid" and an integer "step")'),
        ('{"kind": "test", "step": 7}\n', 'not a metrics record (a JSON object with "kind": "train" or "valid" and an integer "step")'),
    ],
)
def test_a_corrupt_line_names_the_file_and_line(tiny_trained_run, tmp_path, capsys, bad, message):
    run = copy_run(tiny_trained_run, tmp_path / "toy")
    lines = (run / "metrics.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)
    (run / "metrics.jsonl").write_text("".join([*lines[:2], bad, *lines[2:]]), encoding="utf-8")
    assert main(["plot", str(run), "--metrics", "--out", str(tmp_path / "c.png")]) == 2
    assert error_line(capsys) == f"attnkit: error: {run / 'metrics.jsonl'}, line 3: {message}"


def test_a_line_being_written_and_non_finite_values_are_left_out(tiny_trained_run, tmp_path):
    run = copy_run(tiny_trained_run, tmp_path / "toy")
    with (run / "metrics.jsonl").open("a", encoding="utf-8") as f:
        f.write('{"kind": "train", "step": 7, "elapsed": 99.0, "loss": NaN, "lr": 0.5}\n{"kind": "train", "st')
    curves = run_curves(run)
    loss, lr = ({line.label: line for line in p.lines} for p in curves.panels)
    assert loss["train"].step == [1, 2, 3, 4, 5, 6] and lr["train"].step[-1] == 7 and lr["train"].value[-1] == 0.5
    assert [p.key for p in curves.panels] == ["loss", "lr"]  # no metrics asked for: none drawn


def test_plot_metrics_refuses_attention_options(tiny_trained_run, tmp_path, capsys):
    assert main(["plot", str(tiny_trained_run), "--metrics", "--view", "heatmap", "--out", str(tmp_path / "c.png")]) == 2
    assert error_line(capsys) == "attnkit: error: --metrics draws training curves; --view is for attention plots"
    assert main(["plot", str(tiny_trained_run), "--metrics", "--out", str(tmp_path / "c.pdf")]) == 2
    assert error_line(capsys) == f"attnkit: error: {tmp_path / 'c.pdf'}: the output must be a .png or .svg file"
    assert main(["plot", str(tiny_trained_run), "t1", "t2", "--out", str(tmp_path / "maps")]) == 2
    assert error_line(capsys).startswith(f"attnkit: error: plot: 2 arguments after {tiny_trained_run}; give one sentence in quotes")


@pytest.mark.skipif(NODE is None, reason="node is absent")
def test_curves_script_draws_a_chart_per_panel_against_updates_or_minutes(tiny_trained_run):
    curves = run_curves(tiny_trained_run, run_family(tiny_trained_run).run_schema.METRICS).to_json()
    draw = f"""AttnCurves.draw(document.body, {embed_json([curves])});
const all = () => document.body.all(), points = () => all().filter((e) => e.tagName === "POLYLINE").map((e) => e.attributes.points);
const picker = all().find((e) => e.tagName === "SELECT"), before = points();
picker.value = "minutes"; picker.listeners.change.forEach((f) => f());
console.log(JSON.stringify({{charts: all().filter((e) => (e.attributes || {{}}).class === "attn-curve").map((e) => e.attributes["aria-label"]),
                             before, after: points()}}));"""
    out = subprocess.run([NODE, "-e", "\n".join([STUB, template("curves.js"), draw])], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    shown = json.loads(out.stdout)
    assert shown["charts"] == ["loss against minutes", "learning rate against minutes", "BLEU against minutes"]
    lines = [line for p in curves["panels"] for line in p["lines"]]
    assert [len(p.split()) for p in shown["before"]] == [len(line["step"]) for line in lines] == [len(p.split()) for p in shown["after"]]
    assert shown["before"] != shown["after"]
    xs = [float(pt.split(",")[0]) for pt in shown["before"][0].split()]
    assert xs == sorted(xs) and xs[0] < xs[-1]  # updates left to right


def test_the_curve_benchmarks_read_metrics_through_the_package(tiny_trained_run):
    valid = [r for r in read_records(tiny_trained_run / "metrics.jsonl") if r["kind"] == "valid"]
    assert load_benchmark("compare_curves").curve(str(tiny_trained_run)) == {r["step"]: {"bleu": r["bleu"], "loss": r["loss"]} for r in valid}
    assert [q["step"] for q in valid_points(valid, ("bleu", "loss"))] == [3, 6]
    assert valid_points(valid, ("f1",)) == []  # a key the run never logged: no points
