"""The captioning family: Show, Attend and Tell (Xu et al. 2015) over a CNN grid, with optional
SAGAN self-attention blocks (Zhang et al. 2019) on the feature map.

Everything it needs is in this package: the image decoding (`images`), caption files
(`captions`), EfficientNet-Lite0 (`lite0`) and the other encoders with the feature cache
(`encoders`), the config sections (`config`), the codec (`codec`), the model (`model`), the
training task (`task`), inference (`infer`), the attention figure (`figure`), the COCO caption
metrics (`scores`), generated shape images (`shapes`), the CLI verbs (`commands`) and the API
(`api`). `FAMILY` is what `attnkit.families` lists.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import torch

from attnkit.artifacts.runs import LoadedRun
from attnkit.families.captioning import codec, commands, starter
from attnkit.families.captioning.api import API
from attnkit.families.captioning.config import CaptionRun
from attnkit.families.captioning.figure import data_uri, overlay
from attnkit.families.captioning.images import open_image, resize_for_encoder
from attnkit.families.captioning.infer import caption_images
from attnkit.families.captioning.model import build
from attnkit.families.captioning.task import CaptionTask
from attnkit.families.protocol import ExploreOptions, Family
from attnkit.viz.attention_view import AttentionKind, ExplainedInput

CROSS = AttentionKind("cross", "attention over the image grid", ("cell", "word"), "output")  # each word over the grid's cells


def _cells(grid: int) -> list[str]:
    return [f"r{r}c{c}" for r in range(grid) for c in range(grid)]


def _explain(loaded: LoadedRun, lines: Sequence[str], options: ExploreOptions) -> list[ExplainedInput]:
    """Per image path: the caption, its n-best, the words x cells map (kind "cross"), and as fields the
    image's `name`, the `grid` and the figure: the image as the encoder saw it under "image" and, per word,
    that image with the word's attention overlaid under "overlays", as data URIs."""
    out, size = [], loaded.run.model.input_size
    for line, r in zip(lines, caption_images(loaded, list(lines), options.decode)):
        weights = torch.tensor(r.attention).unsqueeze(0)  # (1, T, P)
        nbest = [{"text": c, "score": s, "finished": True} for c, s in r.nbest]
        image = resize_for_encoder(open_image(line), size)
        overlays = [{"word": w, "src": data_uri(overlay(image, a, r.grid))} for w, a in zip(r.words, r.attention)]
        fields = {"name": line, "grid": r.grid, "image": data_uri(image), "overlays": overlays}
        out.append(ExplainedInput(line, r.caption, [CROSS.view(r.words, _cells(r.grid), [weights])], nbest, fields=fields))
    return out


def _info(loaded: LoadedRun) -> dict:
    return {"decode": loaded.run.decode.model_dump(), "encoder": loaded.vocabs.encoder, "grid": loaded.model.grid}


FAMILY = Family(
    name="captioning", kinds=("show_attend_tell",), run_schema=CaptionRun, api=API, task=CaptionTask,
    vocabs_to_json=codec.vocabs_to_json, vocabs_from_json=codec.vocabs_from_json, build=build,
    commands=commands.add_commands, evaluate_options=commands.add_evaluate_arguments, evaluate=commands.evaluate,
    explain=_explain, attention_kinds=(CROSS,), info=_info, data_commands=commands.add_data_commands,
    starter=starter.STARTER, presets=Path(__file__).parent / "presets",
)  # fmt: skip
