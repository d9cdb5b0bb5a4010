"""benchmarks/table3_compare.py: each row's change from its base, next to the paper's, and the verdicts."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from benchmark_scripts import BENCHMARKS, load_benchmark

table3_compare = load_benchmark("table3_compare")


def row(name: str, bleu: float, ppl: float) -> dict:
    return {"name": name, "params": 1000, "metrics": {"bleu": bleu, "ppl": ppl, "loss": 2.0}}


ROWS = [row("base", 30.0, 8.0), row("C-d512", 33.0, 7.0), row("C-N2", 32.0, 8.5), row("A-h8", 30.5, 8.5), row("prenorm", 29.0, 9.0)]


def test_verdicts_follow_the_signs_of_both_changes_and_the_noise() -> None:
    by_name = {r["name"]: r for r in table3_compare.compare(ROWS, noise_bleu=1.3, noise_ppl=0.1)}
    # the paper: d_model 1024 is 0.2 BLEU better (26.0 - 25.8) and 0.26 lower in perplexity (4.66 - 4.92)
    assert by_name["C-d512"]["paper_d_bleu"] == pytest.approx(0.2)
    assert by_name["C-d512"]["paper_d_ppl"] == pytest.approx(-0.26)
    assert (by_name["C-d512"]["d_bleu"], by_name["C-d512"]["d_ppl"]) == (3.0, -1.0)
    assert (by_name["C-d512"]["bleu_verdict"], by_name["C-d512"]["ppl_verdict"]) == ("agrees", "agrees")
    # the paper: N=4 is worse (25.3, 5.19); here better in BLEU by more than the noise, worse in perplexity
    assert (by_name["C-N2"]["bleu_verdict"], by_name["C-N2"]["ppl_verdict"]) == ("disagrees", "agrees")
    # the paper: 16 heads changes perplexity by 0.01 only; here +0.5 BLEU is within the noise
    assert (by_name["A-h8"]["bleu_verdict"], by_name["A-h8"]["ppl_verdict"]) == ("within noise", "paper: no change")
    # a row the paper has not (pre-norm) is compared with the base here only
    assert by_name["prenorm"]["paper"] is None and "bleu_verdict" not in by_name["prenorm"]


def test_the_script_prints_the_table_and_a_json_line(tmp_path: Path) -> None:
    table = tmp_path / "table.json"
    table.write_text(json.dumps({"rows": ROWS}), encoding="utf-8")
    out = subprocess.run(
        [sys.executable, str(BENCHMARKS / "table3_compare.py"), str(table), "--markdown", str(tmp_path / "t.md")], capture_output=True, text=True, check=True
    )
    lines = out.stdout.strip().splitlines()
    assert json.loads(lines[-1])["benchmark"] == "table3_compare"
    markdown = (tmp_path / "t.md").read_text(encoding="utf-8")
    assert "| C-d512 | (C) d_model=1024, d_k=d_v=128 | 4.66 (-0.26) | 26.0 (+0.2) | 7.00 (-1.00) | 33.00 (+3.00) | agrees | agrees |" in markdown
    assert "| base | base | 4.92 | 25.8 | 8.00 | 30.00 | — | — |" in markdown
    assert "| prenorm | — | — | — | 9.00 (+1.00) | 29.00 (-1.00) | — | — |" in markdown


def test_a_sweep_without_a_base_row_is_refused() -> None:
    with pytest.raises(SystemExit, match="no 'base' row"):
        table3_compare.compare(ROWS[1:], noise_bleu=1.3, noise_ppl=0.1)
