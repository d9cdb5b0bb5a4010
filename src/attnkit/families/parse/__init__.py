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

import argparse
from collections.abc import Callable, Sequence
from pathlib import Path

from attnkit.artifacts.runs import LoadedRun
from attnkit.families.parse import codec, commands, explore
from attnkit.families.parse.api import API
from attnkit.families.parse.config import ParseRun
from attnkit.families.parse.task import ParseTask, build, load_data
from attnkit.families.protocol import ExploreOptions


class ParseFamily:
    name = "parsing"
    kinds = ()
    run_schema = ParseRun
    api = API

    def task(self, run: ParseRun, run_dir: Path, data_dir: str | None) -> ParseTask:
        return ParseTask(run, load_data(run, run_dir, data_dir))

    def vocabs_to_json(self, vocabs: codec.ParseVocabs, run_dir: Path) -> dict:
        return codec.vocabs_to_json(vocabs, run_dir)

    def vocabs_from_json(self, info: dict, run_dir: Path) -> codec.ParseVocabs:
        return codec.vocabs_from_json(info, run_dir)

    def build(self, run: ParseRun, vocabs: codec.ParseVocabs):
        return build(run, vocabs)

    def add_commands(self, sub: argparse._SubParsersAction) -> None:
        commands.add_commands(sub, self)

    def add_evaluate_arguments(self, parser: argparse.ArgumentParser) -> list[str]:
        return commands.add_evaluate_arguments(parser)

    def evaluate(self, args: argparse.Namespace, load: Callable[[], LoadedRun]) -> dict:
        return commands.evaluate(args, load)

    def records(self, loaded: LoadedRun, lines: Sequence[str], options: ExploreOptions) -> list[dict]:
        return explore.records(loaded, lines, options)

    def views(self, loaded: LoadedRun, lines: Sequence[str], options: ExploreOptions) -> list[list]:
        return explore.views(loaded, lines, options)

    def info(self, loaded: LoadedRun) -> dict:
        return {"beam": loaded.run.decode.beam, "alpha": loaded.run.decode.alpha, "leaves": loaded.run.data.leaves}


FAMILY = ParseFamily()
