"""A sweep's results: one row per trained variant, read from its run folder, as Markdown, JSON and a plot.

A row is measured, never typed: the validation metrics and the training state of the run's last
checkpoint (the one written when its budget ran out), the parameters of the model loaded from it,
and throughput = target tokens (examples, for classifiers) / seconds spent in updates.
"""

from __future__ import annotations

import json
from pathlib import Path

from attnkit.artifacts.checkpoint import find_checkpoint
from attnkit.config.schema import LOSS, SHARED_METRICS, Metric
from attnkit.config.sweep import Variant
from attnkit.families import load_run
from attnkit.io import atomic_write_text
from attnkit.viz.bars import plot_bars


def row_result(variant: Variant, run_dir: Path) -> dict:
    """The measured result of a finished variant's run folder."""
    checkpoint = find_checkpoint(run_dir, "last")
    saved = json.loads((checkpoint / "state.json").read_text(encoding="utf-8"))
    state = saved["train_state"]
    model = load_run(run_dir, "last").model
    seconds = state.get("update_seconds", 0.0)
    return {
        "name": variant.name,
        "overrides": list(variant.overrides),
        "run": run_dir.name,
        "params": sum(p.numel() for p in model.parameters()),  # shared (tied) parameters counted once
        "steps": state["step"],
        "epochs": state["epoch"],
        "minutes": state["elapsed"] / 60,
        "tokens": state["target_tokens"],
        "tokens_per_s": state["target_tokens"] / seconds if seconds else None,
        "metrics": {k: v for k, v in saved.get("metrics", {}).items() if isinstance(v, (int, float))},
    }


def _columns(rows: list[dict], metrics: tuple[Metric, ...]) -> list[Metric]:
    """The columns: the family's `metrics` (`RunBase.METRICS`), then the shared ones, that some row
    has; the loss only when no row has any."""
    shown = [m for m in (*metrics, *SHARED_METRICS) if any(m.key in r["metrics"] for r in rows)]
    return shown or [LOSS]


def _count(n: int) -> str:
    return f"{n / 1e6:.2f}M" if n >= 1e6 else f"{n / 1e3:.1f}k"


def _cell(value: float | None, fmt: str) -> str:
    return "—" if value is None else fmt.format(value)


def summary(row: dict, metrics: tuple[Metric, ...]) -> str:
    """One line: the metrics (the family's `metrics` first), parameters, throughput and time of a row."""
    shown = " ".join(f"{m.label} {m.show(row['metrics'].get(m.key))}" for m in _columns([row], metrics))
    speed = _cell(row["tokens_per_s"], "{:,.0f}")
    return f"{shown}, {_count(row['params'])} params, {speed} tokens/s, {row['minutes']:.2f} min, {row['steps']} steps"


def markdown(rows: list[dict], metrics: tuple[Metric, ...]) -> str:
    """The rows as a Markdown table: variant, its changes, parameters, metrics, tokens/s, minutes, steps."""
    columns = _columns(rows, metrics)
    head = ["variant", "changes", "params", *(m.label for m in columns), "tokens/s", "minutes", "steps"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        changes = ", ".join(o.removeprefix("model.") for o in r["overrides"]) or "—"
        cells = [r["name"], changes, _count(r["params"]), *(m.show(r["metrics"].get(m.key)) for m in columns),
                 _cell(r["tokens_per_s"], "{:,.0f}"), f"{r['minutes']:.2f}", str(r["steps"])]  # fmt: skip
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def write_tables(out: Path, sweep: dict, rows: list[dict], metrics: tuple[Metric, ...]) -> None:
    """`table.md`, `table.json` and `table.png` (one bar chart per metric, plus parameters and tokens/s) in `out`."""
    budget = ", ".join(sweep["budget"][:1])  # train.max_steps=N or train.max_minutes=M
    common = "".join(f" --set {o}" for o in sweep["common"])
    config = Path(sweep["config"])
    shown = config.relative_to(Path.cwd()) if config.is_relative_to(Path.cwd()) else config  # no machine's path in a shared table
    title = f"Sweep of {shown}{common}, each variant {budget}"
    atomic_write_text(out / "table.md", f"{title}\n\n{markdown(rows, metrics)}")
    atomic_write_text(
        out / "table.json", json.dumps({"config": sweep["config"], "common": sweep["common"], "budget": sweep["budget"], "rows": rows}, indent=1) + "\n"
    )
    panels = {m.label: [r["metrics"].get(m.key) for r in rows] for m in _columns(rows, metrics)}
    panels["params (M)"] = [r["params"] / 1e6 for r in rows]
    panels["tokens/s"] = [r["tokens_per_s"] for r in rows]
    plot_bars([r["name"] for r in rows], panels, out / "table.png", title=f"{Path(sweep['config']).stem}, {budget}")
