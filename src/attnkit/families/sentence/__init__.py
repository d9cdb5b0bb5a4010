"""The sentence family: structured self-attentive sentence embeddings for classification (Lin et al. 2017).

Everything it needs is in this package: the config sections (`config`), the readers of SST, SNLI
and labelled files (`data`, `corpus`), the codec (`codec`), the model and its builder (`model`),
the training task (`task`), inference (`infer`), the explain page (`explain`), the CLI verbs
(`commands`) and the API (`api`). docs/architecture.md walks through it as the example of a
family. `FAMILY` is what `attnkit.families` lists.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from pathlib import Path

from attnkit.artifacts.runs import LoadedRun
from attnkit.errors import AttnkitError
from attnkit.families.protocol import ExploreOptions
from attnkit.families.sentence import codec, commands
from attnkit.families.sentence.api import API, classification_record
from attnkit.families.sentence.config import SentenceRun
from attnkit.families.sentence.infer import classify_texts
from attnkit.families.sentence.model import SelfAttentiveClassifier, build
from attnkit.families.sentence.task import ClassificationTask


class SentenceFamily:
    name = "classification"
    kinds = ("sase",)
    run_schema = SentenceRun
    api = API

    def task(self, run: SentenceRun, run_dir: Path, data_dir: str | None) -> ClassificationTask:
        return ClassificationTask(run, run_dir, data_dir)

    def vocabs_to_json(self, vocabs: codec.SentenceVocabs, run_dir: Path) -> dict:
        return codec.vocabs_to_json(vocabs, run_dir)

    def vocabs_from_json(self, info: dict, run_dir: Path) -> codec.SentenceVocabs:
        return codec.vocabs_from_json(info, run_dir)

    def build(self, run: SentenceRun, vocabs: codec.SentenceVocabs) -> SelfAttentiveClassifier:
        return build(run, vocabs)

    def add_commands(self, sub: argparse._SubParsersAction) -> None:
        commands.add_commands(sub, self)

    def add_evaluate_arguments(self, parser: argparse.ArgumentParser) -> list[str]:
        return commands.add_evaluate_arguments(parser)

    def evaluate(self, args: argparse.Namespace, load: Callable[[], LoadedRun]) -> dict:
        return commands.evaluate(args, load)

    def records(self, loaded: LoadedRun, lines: Sequence[str], options: ExploreOptions) -> list[dict]:
        results = classify_texts(loaded, list(lines))
        return [classification_record(i, text, r) for i, (text, r) in enumerate(zip(lines, results))]

    def views(self, loaded: LoadedRun, lines: Sequence[str], options: ExploreOptions) -> list[list]:
        raise AttnkitError(f"{loaded.folder}: a {loaded.run.model.kind} model does not translate (attnkit explain draws its attention)")

    def info(self, loaded: LoadedRun) -> dict:
        return {}


FAMILY = SentenceFamily()
