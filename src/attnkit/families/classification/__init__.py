"""The sentence family: structured self-attentive sentence embeddings for classification (Lin et al. 2017).

Everything it needs is in this package: the config sections (`config`), the readers of SST, SNLI
and labelled files (`data`, `corpus`), the codec (`codec`), the model and its builder (`model`),
the training task (`task`), inference (`infer`), the explain verb's picture (`explain`), the explorer's
views of the hops and the score attributions explain (`explore`), the CLI verbs (`commands`) and the
API (`api`). docs/architecture.md walks through it as the example of a family. `FAMILY` is what
`attnkit.families` lists.
"""

from __future__ import annotations

from pathlib import Path

from attnkit.families.classification import codec, commands, explore, starter
from attnkit.families.classification.api import API
from attnkit.families.classification.config import SentenceRun
from attnkit.families.classification.model import build
from attnkit.families.classification.task import ClassificationTask
from attnkit.families.protocol import Family

FAMILY = Family(
    name="classification", kinds=("sase",), run_schema=SentenceRun, api=API, task=ClassificationTask,
    vocabs_to_json=codec.vocabs_to_json, vocabs_from_json=codec.vocabs_from_json, build=build,
    commands=commands.add_commands, evaluate_options=commands.add_evaluate_arguments, evaluate=commands.evaluate,
    explain=explore.explain, attention_kinds=explore.KINDS, info=lambda loaded: {}, attribution=explore.score_function,
    starter=starter.STARTER, presets=Path(__file__).parent / "presets",
)  # fmt: skip
