"""The translation family: parallel text into an encoder-decoder (the Transformer, RNN decoders).

Everything translation-specific is in this package: the config sections (`config`), the codec
(`codec`), data preparation (`corpus`, `prepare`), the model builder (`model`), the training task
(`task`), decoding text (`translate`), attention maps (`explore`), scoring (`evaluate`), the CLI
verbs (`commands`), the API (`api`) and the demo (`demo`). `FAMILY` is what `attnkit.families`
lists.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from attnkit.artifacts.runs import LoadedRun
from attnkit.families.protocol import ExploreOptions
from attnkit.families.translation import codec, commands, demo
from attnkit.families.translation.api import API
from attnkit.families.translation.config import TranslationRun
from attnkit.families.translation.explore import explore, record
from attnkit.families.translation.model import build
from attnkit.families.translation.task import TranslationTask, load_data


class TranslationFamily:
    name = "translation"
    kinds = ("transformer", "rnn")
    run_schema = TranslationRun
    api = API

    def task(self, run: TranslationRun, run_dir: Path, data_dir: str | None) -> TranslationTask:
        return TranslationTask(run, load_data(run, run_dir, data_dir))

    def vocabs_to_json(self, vocabs: codec.Vocabs, run_dir: Path) -> dict:
        return codec.vocabs_to_json(vocabs, run_dir)

    def vocabs_from_json(self, info: dict, run_dir: Path) -> codec.Vocabs:
        return codec.vocabs_from_json(info, run_dir)

    def build(self, run: TranslationRun, vocabs: codec.Vocabs) -> Any:
        return build(run, vocabs)

    def add_commands(self, sub: argparse._SubParsersAction) -> None:
        commands.add_commands(sub, self)

    def add_evaluate_arguments(self, parser: argparse.ArgumentParser) -> list[str]:
        return commands.add_evaluate_arguments(parser)

    def evaluate(self, args: argparse.Namespace, load: Callable[[], LoadedRun]) -> dict:
        return commands.evaluate(args, load)

    def records(self, loaded: LoadedRun, lines: Sequence[str], options: ExploreOptions) -> list[dict]:
        return [record(e) for e in explore(loaded, lines, options.decode, words=options.words)]

    def views(self, loaded: LoadedRun, lines: Sequence[str], options: ExploreOptions) -> list[list]:
        return [e.views for e in explore(loaded, lines, options.decode, words=options.words)]

    def info(self, loaded: LoadedRun) -> dict:
        return {"beam": loaded.run.decode.beam, "alpha": loaded.run.decode.alpha}


FAMILY = TranslationFamily()

__all__ = ["FAMILY", "TranslationFamily", "demo"]
