"""`make demo` / `attnkit demo`: the main job on its built-in default.

`attnkit.families.DEMO` says what to train (`setup`) and what to show of the trained model
(`showcase`); this module trains it for a few hundred updates with a progress bar. For translation: Luong
attention on Multi30k En->De, test BLEU, samples, a cross-attention heatmap and an HTML report.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from attnkit.artifacts.lock import locked
from attnkit.errors import AttnkitError
from attnkit.families import DEMO, load_config, load_run, presets
from attnkit.progress import TrainProgress
from attnkit.train.loop import train


def run_demo(steps: int | None, minutes: float, data_dir: str | None, out: str) -> int:
    def load(name: str, overrides: list[str]):
        return load_config(presets()[name], overrides)

    run, data = DEMO.setup(load, steps or DEMO.STEPS, minutes, data_dir)
    out_dir = Path(out)
    if out_dir.exists():
        if not (out_dir / "run.json").is_file():
            raise AttnkitError(f"{out_dir}: exists and is not a run folder; choose another --out")
        with locked(out_dir):  # never delete a run that another process is training
            shutil.rmtree(out_dir)
    with TrainProgress(run) as progress:
        train(run, out_dir, on_event=progress.event)
    DEMO.showcase(load_run(out_dir), data, out_dir, lambda lines, beam: _report(out_dir, lines, beam))
    return 0


def _report(run_dir: Path, lines: list[str], beam: int) -> Path:
    """The demo's report page of `lines` at `beam`, through the one road (`sources.page`), with the training curves."""
    from attnkit.sources import AttentionOptions, open_source
    from attnkit.sources.page import page_records
    from attnkit.viz.report import write_report

    source = open_source(run_dir)
    script, style = source.renderer()
    return write_report(page_records(source, lines, AttentionOptions(beam=beam)), run_dir / "report.html",
                        title=f"attnkit demo: {len(lines)} test sentences", renderer=script, curves=source.curves(), style=style)  # fmt: skip
