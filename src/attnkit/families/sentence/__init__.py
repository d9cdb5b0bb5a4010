"""The sentence family: structured self-attentive sentence embeddings for classification (Lin et al. 2017).

Everything it needs is in this package: the config sections (`config`), the readers of SST, SNLI
and labelled files (`data`, `corpus`), the codec (`codec`), the model and its builder (`model`),
the training task (`task`), inference (`infer`), the explain page (`explain`), the CLI verbs
(`commands`) and the API (`api`). docs/architecture.md walks through it as the example of a
family. `FAMILY` is what `attnkit.families` lists.
"""

from __future__ import annotations

from collections.abc import Sequence

from attnkit.artifacts.runs import LoadedRun
from attnkit.errors import AttnkitError
from attnkit.families.protocol import ExploreOptions, Family
from attnkit.families.sentence import codec, commands
from attnkit.families.sentence.api import API, classification_record
from attnkit.families.sentence.config import SentenceRun
from attnkit.families.sentence.infer import classify_texts
from attnkit.families.sentence.model import build
from attnkit.families.sentence.task import ClassificationTask


def _records(loaded: LoadedRun, lines: Sequence[str], options: ExploreOptions) -> list[dict]:
    results = classify_texts(loaded, list(lines))
    return [classification_record(i, text, r) for i, (text, r) in enumerate(zip(lines, results))]


def _views(loaded: LoadedRun, lines: Sequence[str], options: ExploreOptions) -> list[list]:
    raise AttnkitError(f"{loaded.folder}: a {loaded.run.model.kind} model does not translate (attnkit explain draws its attention)")


FAMILY = Family(
    name="classification", kinds=("sase",), run_schema=SentenceRun, api=API, task=ClassificationTask,
    vocabs_to_json=codec.vocabs_to_json, vocabs_from_json=codec.vocabs_from_json, build=build,
    commands=commands.add_commands, evaluate_options=commands.add_evaluate_arguments, evaluate=commands.evaluate,
    records=_records, views=_views, info=lambda loaded: {},
)  # fmt: skip
