"""Constituency parsing as sequence-to-sequence (Vaswani et al. 2017, sec. 6.3; Vinyals et al. 2015).

The tree layer is pure (standard library and `attnkit.errors` only): `trees` reads and
preprocesses Penn Treebank trees, `linear` turns them into symbol sequences and back (with the
constraint state a constrained search needs), `evalb` scores parses exactly as EVALB (Sekine &
Collins 1997) does, and `baseline` gives the right-branching trees to compare against.

On top of it, the family: the config sections (`config`), the codec (`codec`), the training task
(`task`), the constrained decoder (`constrained`), parsing text (`infer`), attention maps and the
tree drawing (`explore`, `draw`), the CLI verbs (`commands`) and the API (`api`). `FAMILY` is what
`attnkit.families` lists; configs say `task: parsing` (the model is the shared Transformer).

Beside it, `model.kind: chart` is the self-attentive chart parser (Kitaev & Klein 2018): span
charts and CKY, its codec, model, task and parsing (the subpackage `chart`: `cky`, `codec`, `model`,
`task`, `infer`), with the same reader, EVALB, verbs, report and page.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from torch import nn

from attnkit.artifacts.runs import LoadedRun
from attnkit.families.parsing import codec, commands, explore, starter, task
from attnkit.families.parsing.api import API
from attnkit.families.parsing.chart import codec as chart_codec
from attnkit.families.parsing.chart import task as chart_task
from attnkit.families.parsing.chart.codec import ChartVocabs
from attnkit.families.parsing.config import ChartModel, ParseRun
from attnkit.families.protocol import Family, Task


def _task(run: ParseRun, run_dir: Path, data_dir: str | None) -> Task:
    if isinstance(run.model, ChartModel):
        return chart_task.ChartTask(run, chart_task.load_data(run, run_dir, data_dir))
    return task.ParseTask(run, task.load_data(run, run_dir, data_dir))


def _build(run: ParseRun, vocabs: Any) -> nn.Module:
    return chart_task.build(run, vocabs) if isinstance(run.model, ChartModel) else task.build(run, vocabs)


def _vocabs_to_json(vocabs: Any, folder: Path) -> dict:
    return chart_codec.vocabs_to_json(vocabs, folder) if isinstance(vocabs, ChartVocabs) else codec.vocabs_to_json(vocabs, folder)


def _vocabs_from_json(info: dict, folder: Path) -> Any:
    return chart_codec.vocabs_from_json(info, folder) if "labels" in info else codec.vocabs_from_json(info, folder)


def _info(loaded: LoadedRun) -> dict:
    if isinstance(loaded.run.model, ChartModel):
        return {}  # `kind: chart` says it; no beam
    return {"beam": loaded.run.decode.beam, "alpha": loaded.run.decode.alpha, "leaves": loaded.run.data.leaves}


FAMILY = Family(
    name="parsing", kinds=(), run_schema=ParseRun, api=API, task=_task,
    vocabs_to_json=_vocabs_to_json, vocabs_from_json=_vocabs_from_json, build=_build,
    commands=commands.add_commands, evaluate_options=commands.add_evaluate_arguments, evaluate=commands.evaluate,
    explain=explore.explain, attention_kinds=explore.KINDS, info=_info,
    starter=starter.STARTER, presets=Path(__file__).parent / "presets", pairs=codec.encode_pairs,
)  # fmt: skip
