"""Constituency parsing as sequence-to-sequence (Vaswani et al. 2017, sec. 6.3; Vinyals et al. 2015).

The tree layer is pure (standard library and `attnkit.errors` only): `trees` reads and
preprocesses Penn Treebank trees, `linear` turns them into symbol sequences and back (with the
constraint state a constrained search needs), `evalb` scores parses exactly as EVALB (Sekine &
Collins 1997) does, and `baseline` gives the right-branching trees to compare against.

On top of it, the family: the config sections (`config`), the codec (`codec`), the training task
(`task`), the constrained decoder (`constrained`), parsing text (`infer`), attention maps and the
tree drawing (`explore`, `draw`), the CLI verbs (`commands`) and the API (`api`). `FAMILY` is what
`attnkit.families` lists; configs say `task: parsing` (the model is the shared Transformer).
"""

from __future__ import annotations

from pathlib import Path

from attnkit.artifacts.runs import LoadedRun
from attnkit.families.parse import codec, commands, explore
from attnkit.families.parse.api import API
from attnkit.families.parse.config import ParseRun
from attnkit.families.parse.task import ParseTask, build, load_data
from attnkit.families.protocol import Family


def _task(run: ParseRun, run_dir: Path, data_dir: str | None) -> ParseTask:
    return ParseTask(run, load_data(run, run_dir, data_dir))


def _info(loaded: LoadedRun) -> dict:
    return {"beam": loaded.run.decode.beam, "alpha": loaded.run.decode.alpha, "leaves": loaded.run.data.leaves}


FAMILY = Family(
    name="parsing", kinds=(), run_schema=ParseRun, api=API, task=_task,
    vocabs_to_json=codec.vocabs_to_json, vocabs_from_json=codec.vocabs_from_json, build=build,
    commands=commands.add_commands, evaluate_options=commands.add_evaluate_arguments, evaluate=commands.evaluate,
    records=explore.records, views=explore.views, info=_info,
)  # fmt: skip
