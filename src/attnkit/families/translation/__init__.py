"""The translation family: parallel text into an encoder-decoder (the Transformer, RNN decoders).

Everything translation-specific is in this package: the config sections (`config`), the codec
(`codec`), the data tools (`data/`: `corpus`, `prepare`, `check`, `fetch`, `wmt14`, `synthetic`), the model builder (`model`), the training task
(`task`), decoding text (`translate`; with CTranslate2: `engine`), attention maps (`explore`, `teacher_forced`), the score attributions explain (`attribute`), scoring (`evaluate`), the CLI
verbs (`commands`; `data/commands`: `attnkit data check|fetch`), the API (`api`) and the demo (`demo`). `FAMILY` is what `attnkit.families`
lists.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from attnkit.artifacts.runs import LoadedRun
from attnkit.families.protocol import Engine, ExploreOptions, Family
from attnkit.families.translation import attribute, codec, commands, demo, engine, starter
from attnkit.families.translation.api import API
from attnkit.families.translation.config import TranslationRun
from attnkit.families.translation.data import commands as data_commands
from attnkit.families.translation.explore import KINDS, explained, explore
from attnkit.families.translation.model import build
from attnkit.families.translation.task import TranslationTask, load_data
from attnkit.viz.attention_view import ExplainedInput


def _task(run: TranslationRun, run_dir: Path, data_dir: str | None) -> TranslationTask:
    return TranslationTask(run, load_data(run, run_dir, data_dir))


def _init_task(run: TranslationRun, run_dir: Path, data_dir: str | None, vocabs: codec.Vocabs) -> TranslationTask:
    return TranslationTask(run, load_data(run, run_dir, data_dir, vocabs))


def _explain(loaded: LoadedRun, lines: Sequence[str], options: ExploreOptions) -> list[ExplainedInput]:
    return [explained(e) for e in explore(loaded, lines, options.decode, words=options.words, target=options.target)]


def _info(loaded: LoadedRun) -> dict:
    return {"beam": loaded.run.decode.beam, "alpha": loaded.run.decode.alpha, "engine": "attnkit" if loaded.engine is None else loaded.engine.name}


FAMILY = Family(
    name="translation", kinds=("transformer", "rnn"), run_schema=TranslationRun, api=API, task=_task,
    vocabs_to_json=codec.vocabs_to_json, vocabs_from_json=codec.vocabs_from_json, build=build,
    commands=commands.add_commands, evaluate_options=commands.add_evaluate_arguments, evaluate=commands.evaluate,
    explain=_explain, attention_kinds=KINDS, info=_info, init_task=_init_task, data_commands=data_commands.add_data_commands,
    attribution=attribute.score_function, engines={"ctranslate2": Engine(("ctranslate2",), engine.attach)},
    starter=starter.STARTER, presets=Path(__file__).parent / "presets", pairs=codec.encode_pairs, forced_decoding=True,
)  # fmt: skip

__all__ = ["FAMILY", "demo"]
