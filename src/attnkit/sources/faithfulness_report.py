"""The summary of `attnkit faithfulness` over every explained output in examples.jsonl.

`faithfulness.json`:

- `run`: the source, the data file, the number of texts and the settings (methods, the AOPC bins
  `fractions`, the deletion curve's `curve` points, the random ranking's `seed`);
- `outputs`: how many outputs were explained (a translation explains each output token of a text);
- `methods.<name>`: `n` (outputs), `comprehensiveness` and `sufficiency` (`aopc`: mean, std over
  outputs; `bins`: the mean per bin), `deletion` (`curve`: the mean p(y) per point; `area`: mean, std);
- `kendall_tau.<a>.<b>`: Kendall's tau-b (`analysis.correlation.kendall_tau`, scipy's default variant)
  between the two methods' token scores, mean and std over the outputs where it is defined (both
  rankings not constant, two tokens or more), with that count `n`;
- `unavailable`: methods asked for that the source has not (rollout and flow of a model without
  self-attention layers);
- `integrated_gradients`: the largest step count used, the largest completeness error
  (|sum of attributions - (f(x) - f(0))| / |f(x) - f(0)|) over the outputs, and how many outputs
  missed the 1% check even at 800 steps (`over_tolerance`: they are kept, ranked by those figures).

Standard deviations are over outputs, with n - 1 (0 for one output). `faithfulness.md` holds the
same as two tables, `deletion.png` the mean deletion curves (`viz.faithfulness`).
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path

from attnkit.analysis.attribution import TOLERANCE
from attnkit.analysis.correlation import kendall_tau
from attnkit.analysis.faithfulness import deletion_area
from attnkit.io import atomic_write_text


def stats(values: Sequence[float]) -> dict:
    """{"mean", "std", "n"} of `values` (std with n - 1; None for no value)."""
    n = len(values)
    if not n:
        return {"mean": None, "std": None, "n": 0}
    mean = sum(values) / n
    std = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1)) if n > 1 else 0.0
    return {"mean": mean, "std": std, "n": n}


def _column_means(rows: list[list[float]]) -> list[float]:
    return [sum(col) / len(col) for col in zip(*rows)]


def method_summary(outputs: list[dict], name: str, points: Sequence[float]) -> dict:
    """One method's figures over the outputs that have it."""
    have = [o for o in outputs if name in o["scores"]]
    summary = {"n": len(have)}
    for metric in ("comprehensiveness", "sufficiency"):
        bins = [o[metric][name] for o in have]
        summary[metric] = {"aopc": stats([sum(b) / len(b) for b in bins]), "bins": _column_means(bins)}
    curves = [o["curve"][name] for o in have]
    summary["deletion"] = {"curve": _column_means(curves), "area": stats([deletion_area(c, points) for c in curves])}
    return summary


def tau_summary(outputs: list[dict], names: list[str]) -> dict:
    """Kendall's tau-b of every pair of methods, over the outputs where it is defined."""
    taus: dict[str, dict] = {}
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            values = []
            for o in outputs:
                if a in o["scores"] and b in o["scores"] and len(o["tokens"]) >= 2:
                    tau = kendall_tau(o["scores"][a], o["scores"][b])
                    if not math.isnan(tau):
                        values.append(tau)
            taus.setdefault(a, {})[b] = stats(values)
    return taus


def summarise(records: list[dict], run: dict) -> dict:
    """The summary document of examples.jsonl's `records` (module docstring)."""
    outputs = [o for r in records for o in r["outputs"]]
    names = list(dict.fromkeys(name for o in outputs for name in o["scores"]))
    points = run["settings"]["curve"]
    found = {"attention" if "/layer" in n else n for n in names}
    doc = {"run": run, "outputs": len(outputs), "methods": {n: method_summary(outputs, n, points) for n in names},
           "kendall_tau": tau_summary(outputs, names), "unavailable": [m for m in run["settings"]["methods"] if m not in found]}  # fmt: skip
    ig = [o["ig"] for o in outputs if "ig" in o]
    if ig:
        errors = [g["relative_error"] for g in ig]
        doc["integrated_gradients"] = {"max_steps": max(g["steps"] for g in ig), "max_relative_error": max(errors),
                                       "over_tolerance": sum(e > TOLERANCE for e in errors)}  # fmt: skip
    return doc


def _pm(s: dict) -> str:
    if s["mean"] is None:
        return "n/a"
    mean = f"{s['mean']:.3f}"
    return f"{'0.000' if mean == '-0.000' else mean} ± {s['std']:.3f}"


def markdown(doc: dict) -> str:
    """The summary as Markdown: a table of the metrics per method, then the Kendall tau matrix."""
    run, methods = doc["run"], doc["methods"]
    fractions = ", ".join(f"{d:.0%}" for d in run["settings"]["fractions"])
    lines = [
        f"# Faithfulness of {run['source']} on {run['data']}",
        "",
        f"{run['examples']} texts, {doc['outputs']} explained outputs; AOPC over the top {fractions} of the tokens; mean ± std over outputs.",
        "",
        "| method | comprehensiveness AOPC (higher is better) | sufficiency AOPC (lower is better) | deletion area (lower is better) | n |",
        "|---|---|---|---|---|",
    ]
    for name, m in methods.items():
        lines.append(f"| {name} | {_pm(m['comprehensiveness']['aopc'])} | {_pm(m['sufficiency']['aopc'])} | {_pm(m['deletion']['area'])} | {m['n']} |")
    if doc["unavailable"]:
        lines += ["", f"Not available for this model: {', '.join(doc['unavailable'])}."]
    names = list(methods)
    lines += ["", "Kendall's tau-b between the methods' token scores (mean ± std over outputs):", ""]
    lines += ["| | " + " | ".join(names) + " |", "|---" * (len(names) + 1) + "|"]
    for a in names:
        cells = ["1" if a == b else _pm(doc["kendall_tau"].get(a, {}).get(b) or doc["kendall_tau"].get(b, {}).get(a)) for b in names]
        lines.append(f"| {a} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def write_report(records: list[dict], run: dict, out: Path) -> dict:
    """Write faithfulness.json, faithfulness.md and deletion.png into `out`; returns the summary."""
    from attnkit.viz.faithfulness import plot_deletion_curves

    doc = summarise(records, run)
    atomic_write_text(out / "faithfulness.json", json.dumps(doc, indent=1) + "\n")
    atomic_write_text(out / "faithfulness.md", markdown(doc))
    curves = {name: m["deletion"]["curve"] for name, m in doc["methods"].items() if m["n"]}
    plot_deletion_curves(run["settings"]["curve"], curves, out / "deletion.png", f"{Path(run['source']).name}: {doc['outputs']} outputs")
    return doc
