"""The Table 3 sweep (`sweeps/table3`) next to the paper's Table 3: each row's change from its own base.

Reads the sweep's `table.json` (written by `attnkit sweep sweeps/table3 --out DIR`) and prints, per row,
the paper's row it scales, the paper's BLEU and perplexity and their change from the paper's base
model, the measured ones and their change from the measured base, and whether the two changes go the
same way. A measured change smaller than the noise (`--noise-bleu` 1.3, `--noise-ppl` 0.1: how far
the same row moved between two runs, docs/experiments.md) is marked "within noise" instead, and a
paper's change of at most 0.1 BLEU (one unit of its last digit) or 0.05 perplexity "paper: no
change". Perplexities of rows with different label smoothing are both unsmoothed (per-token
negative log-likelihood), here and in the paper.

Prints the Markdown table, then one JSON line with the rows.

    .venv/bin/python benchmarks/table3_compare.py runs/table3/table.json
    .venv/bin/python benchmarks/table3_compare.py benchmarks/results/table3/table.json --markdown /tmp/t3.md
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

# "Attention Is All You Need", Table 3: newstest2013 (dev) perplexity (per wordpiece) and BLEU.
PAPER_BASE = {"row": "base", "ppl": 4.92, "bleu": 25.8}
PAPER = {
    "A-h1": {"row": "(A) h=1, d_k=d_v=512", "ppl": 5.29, "bleu": 24.9},
    "A-h2": {"row": "(A) h=4, d_k=d_v=128", "ppl": 5.00, "bleu": 25.5},
    "A-h8": {"row": "(A) h=16, d_k=d_v=32", "ppl": 4.91, "bleu": 25.8},
    "A-h16": {"row": "(A) h=32, d_k=d_v=16", "ppl": 5.01, "bleu": 25.4},
    "B-dk16": {"row": "(B) d_k=16", "ppl": 5.16, "bleu": 25.1},
    "B-dk32": {"row": "(B) d_k=32", "ppl": 5.01, "bleu": 25.4},
    "C-N1": {"row": "(C) N=2", "ppl": 6.11, "bleu": 23.7},
    "C-N2": {"row": "(C) N=4", "ppl": 5.19, "bleu": 25.3},
    "C-N4": {"row": "(C) N=8", "ppl": 4.88, "bleu": 25.5},
    "C-d128": {"row": "(C) d_model=256, d_k=d_v=32", "ppl": 5.75, "bleu": 24.5},
    "C-d512": {"row": "(C) d_model=1024, d_k=d_v=128", "ppl": 4.66, "bleu": 26.0},
    "C-ff512": {"row": "(C) d_ff=1024", "ppl": 5.12, "bleu": 25.4},
    "C-ff2048": {"row": "(C) d_ff=4096", "ppl": 4.75, "bleu": 26.2},
    "D-drop0": {"row": "(D) P_drop=0.0", "ppl": 5.77, "bleu": 24.6},
    "D-drop0.2": {"row": "(D) P_drop=0.2", "ppl": 4.95, "bleu": 25.5},
    "D-ls0": {"row": "(D) eps_ls=0.0", "ppl": 4.67, "bleu": 25.3},
    "D-ls0.2": {"row": "(D) eps_ls=0.2", "ppl": 5.47, "bleu": 25.7},
    "E-learned": {"row": "(E) learned positions", "ppl": 4.92, "bleu": 25.7},
}
PAPER_NO_CHANGE = {"bleu": 0.1 + 1e-9, "ppl": 0.05}  # the paper prints BLEU to 0.1, perplexity to 0.01


def _sign(x: float) -> int:
    return (x > 0) - (x < 0)


def verdict(ours: float, paper: float, noise: float, paper_no_change: float) -> str:
    """Whether a measured change goes the paper's way ("agrees", "disagrees"), or either is too small to tell."""
    if abs(ours) < noise:
        return "within noise"
    if abs(paper) <= paper_no_change:
        return "paper: no change"
    return "agrees" if _sign(ours) == _sign(paper) else "disagrees"


def compare(rows: list[dict], noise_bleu: float, noise_ppl: float) -> list[dict]:
    """One record per measured row: the paper's figures and changes next to the measured ones."""
    by_name = {r["name"]: r for r in rows}
    if "base" not in by_name:
        raise SystemExit("table3_compare: the sweep has no 'base' row to compare the others with")
    base = by_name["base"]["metrics"]
    out = []
    for r in rows:
        m, paper = r["metrics"], PAPER.get(r["name"], PAPER_BASE if r["name"] == "base" else None)
        record = {"name": r["name"], "params": r["params"], "bleu": m["bleu"], "ppl": m["ppl"],
                  "d_bleu": m["bleu"] - base["bleu"], "d_ppl": m["ppl"] - base["ppl"], "paper": paper}  # fmt: skip
        if paper is not None and r["name"] != "base":
            paper_d_bleu, paper_d_ppl = paper["bleu"] - PAPER_BASE["bleu"], paper["ppl"] - PAPER_BASE["ppl"]
            record |= {"paper_d_bleu": paper_d_bleu, "paper_d_ppl": paper_d_ppl,
                       "bleu_verdict": verdict(record["d_bleu"], paper_d_bleu, noise_bleu, PAPER_NO_CHANGE["bleu"]),
                       "ppl_verdict": verdict(record["d_ppl"], paper_d_ppl, noise_ppl, PAPER_NO_CHANGE["ppl"])}  # fmt: skip
        out.append(record)
    return out


def _value(x: float, change: float | None, fmt: str) -> str:
    """`x`, and its change from the base in brackets with its sign (none for the base itself)."""
    return fmt.format(x) if change is None else f"{fmt.format(x)} ({'+' if change > 0 else ''}{fmt.format(change)})"


def markdown(records: list[dict]) -> str:
    head = ["row here", "the paper's row", "paper PPL (Δ)", "paper BLEU (Δ)", "PPL here (Δ)", "BLEU here (Δ)", "PPL: same way?", "BLEU: same way?"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in records:
        p, is_base = r["paper"], r["name"] == "base"
        paper_cells = [p["row"], _value(p["ppl"], r.get("paper_d_ppl"), "{:.2f}"), _value(p["bleu"], r.get("paper_d_bleu"), "{:.1f}")] if p else ["—"] * 3
        ours = [_value(r["ppl"], None if is_base else r["d_ppl"], "{:.2f}"), _value(r["bleu"], None if is_base else r["d_bleu"], "{:.2f}")]
        lines.append("| " + " | ".join([r["name"], *paper_cells, *ours, r.get("ppl_verdict", "—"), r.get("bleu_verdict", "—")]) + " |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("table", type=Path, help="the sweep's table.json")
    parser.add_argument("--noise-bleu", type=float, default=1.3, help="measured BLEU changes smaller than this are 'within noise'")
    parser.add_argument("--noise-ppl", type=float, default=0.1, help="measured perplexity changes smaller than this are 'within noise'")
    parser.add_argument("--markdown", type=Path, help="also write the Markdown table here")
    args = parser.parse_args()
    records = compare(json.loads(args.table.read_text(encoding="utf-8"))["rows"], args.noise_bleu, args.noise_ppl)
    table = markdown(records)
    print(table)
    if args.markdown:
        args.markdown.write_text(table, encoding="utf-8")
    print(json.dumps({"benchmark": "table3_compare", "noise_bleu": args.noise_bleu, "noise_ppl": args.noise_ppl, "rows": records}))


if __name__ == "__main__":
    main()
