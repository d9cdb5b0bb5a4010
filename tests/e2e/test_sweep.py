"""`attnkit sweep`: variants from --grid and sweep files; two tiny variants write the table; a sweep
killed (SIGKILL) in its second row resumes that row from its checkpoint without redoing the first."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from attnkit.artifacts.checkpoint import checkpoint_dirs
from attnkit.cli import main
from attnkit.config.sweep import Variant, budget_overrides, combine, file_axes, grid_axes, grid_variants, named_variants, split_values
from attnkit.errors import ConfigError

# One thread and tiny models: a row of 50 updates takes a few seconds on 2 busy cores; a checkpoint every 10.
CONFIG = """\
data:
  corpus: synthetic
  synthetic: {task: reverse, vocab_size: 10, min_len: 3, max_len: 8, train_size: 2000, valid_size: 20, seed: 1234}
  tokenizer: word
model: {kind: transformer, layers: 1, d_model: 32, n_heads: 2, d_ff: 64, dropout: 0.0, norm: pre}
train: {seed: 1, threads: 1, max_tokens: 256, max_steps: 1, eval_every: 10, log_every: 10, keep_last: 2,
        schedule: {kind: inverse_sqrt, lr: 0.002, warmup: 20}}
decode: {max_len_a: 1.0, max_len_b: 3}
"""
STEPS = 50


def test_grid_is_a_product_with_short_names():
    variants = grid_variants(grid_axes(["model.n_heads=1,2", "model.layers=1,3"]))
    assert [v.name for v in variants] == ["n_heads=1,layers=1", "n_heads=1,layers=3", "n_heads=2,layers=1", "n_heads=2,layers=3"]
    assert variants[1].overrides == ("model.n_heads=1", "model.layers=3")
    assert [v.name for v in grid_variants(grid_axes(["model.dropout=0", "train.dropout=1"]))] == ["model.dropout=0,train.dropout=1"]
    assert split_values("[0.9,0.98], [0.9,0.999]") == ["[0.9,0.98]", "[0.9,0.999]"]
    with pytest.raises(ConfigError, match="expected key.path=value1,value2"):
        grid_axes(["model.n_heads"])
    with pytest.raises(ConfigError, match="an empty value"):
        grid_variants(grid_axes(["model.n_heads=1,,2"]))


def test_named_variants_cross_the_grid_and_need_distinct_folders():
    named = named_variants({"base": {}, "E": {"model.positions": "learned", "model.dropout": 0.0, "model.d_k": None}})
    assert named[1].overrides == ("model.positions=learned", "model.dropout=0.0", "model.d_k=null")
    crossed = combine(named, grid_variants(file_axes({"train.seed": [1, 2]})))
    assert [v.name for v in crossed] == ["base,seed=1", "base,seed=2", "E,seed=1", "E,seed=2"]
    assert Variant("a/b c").folder == "a_b_c"
    with pytest.raises(ConfigError, match="share the run folder a_b"):
        combine([Variant("a/b"), Variant("a b")], [])
    with pytest.raises(ConfigError, match="nothing to sweep"):
        combine([], [])
    with pytest.raises(ConfigError, match="one budget"):
        budget_overrides(None, None)
    assert budget_overrides(None, 2.5)[0] == "train.max_minutes=2.5"


def _sweep_args(config: Path, out: Path, *extra: str) -> list[str]:
    return ["sweep", str(config), "--grid", "model.n_heads=1,2", "--steps", str(STEPS), "--out", str(out), *extra]


def _wait_for(condition, proc: subprocess.Popen, what: str) -> None:
    deadline = time.monotonic() + 90
    while not condition():
        assert proc.poll() is None, f"the sweep ended before {what}: {proc.stderr.read()}"
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)


@pytest.mark.slow
def test_killed_sweep_resumes_without_redoing_finished_rows(tmp_path: Path, capsys) -> None:
    config, out = tmp_path / "toy.yaml", tmp_path / "sweep"
    config.write_text(CONFIG)
    first, second = out / "n_heads=1", out / "n_heads=2"
    proc = subprocess.Popen([sys.executable, "-m", "attnkit", *_sweep_args(config, out)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    _wait_for(lambda: checkpoint_dirs(second), proc, "the second row's first checkpoint")
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    proc.stderr.close()
    done = sorted(p.name for p in (out / "rows").iterdir())
    assert done == ["n_heads=1.json"], done  # the first row finished; the second was cut
    table = json.loads((out / "table.json").read_text())
    assert [r["name"] for r in table["rows"]] == ["n_heads=1"]
    untouched = {p: p.stat().st_mtime_ns for p in [out / "rows" / "n_heads=1.json", first / "metrics.jsonl", *checkpoint_dirs(first)]}
    cut_at = int(checkpoint_dirs(second)[-1].name.removeprefix("step_"))
    assert 0 < cut_at < STEPS

    capsys.readouterr()
    assert main(_sweep_args(config, out)) == 0
    lines = [line for line in capsys.readouterr().out.splitlines() if line.startswith("[")]  # not the validation lines
    assert lines[0].startswith("[1/2] n_heads=1: done before (BLEU ")
    assert lines[1] == f"[2/2] n_heads=2: resuming from step {cut_at}"
    assert lines[2].startswith("[2/2] n_heads=2: BLEU ") and lines[2].endswith(f"{STEPS} steps")
    assert {p: p.stat().st_mtime_ns for p in untouched} == untouched
    table = json.loads((out / "table.json").read_text())
    assert [(r["name"], r["steps"], r["overrides"]) for r in table["rows"]] == [
        ("n_heads=1", STEPS, ["model.n_heads=1"]),
        ("n_heads=2", STEPS, ["model.n_heads=2"]),
    ]
    for row in table["rows"]:
        assert row["params"] > 0 and row["tokens_per_s"] > 0 and row["minutes"] > 0
        assert 0 <= row["metrics"]["bleu"] <= 100 and row["metrics"]["ppl"] > 1
    assert table["rows"][0]["params"] == table["rows"][1]["params"]  # heads split d_model: the same weights
    markdown = (out / "table.md").read_text().splitlines()
    assert markdown[2] == "| variant | changes | params | BLEU | PPL | tokens/s | minutes | steps |" and len(markdown) == 6
    assert (out / "table.png").read_bytes()[:4] == b"\x89PNG"

    # Everything done: a rerun trains nothing; another sweep into the same folder is refused in one line.
    assert main(_sweep_args(config, out)) == 0
    assert [": done before (BLEU " in line for line in capsys.readouterr().out.splitlines()] == [True, True, False]  # and the table line
    assert main(_sweep_args(config, out, "--set", "model.dropout=0.1")) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"attnkit: error: {out}: holds another sweep (its common differ") and "\n" not in err


def test_bad_variant_is_one_line_before_anything_trains(tmp_path: Path, capsys) -> None:
    config, out = tmp_path / "toy.yaml", tmp_path / "sweep"
    config.write_text(CONFIG)
    assert main(["sweep", str(config), "--grid", "model.n_heads=2,5", "--steps", "1", "--out", str(out)]) == 2
    assert "d_model (32) must be divisible by n_heads (5)" in capsys.readouterr().err
    assert not out.exists()
