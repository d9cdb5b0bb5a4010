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

import argparse
from collections.abc import Callable, Sequence
from pathlib import Path

import torch

from attnkit.artifacts.runs import LoadedRun
from attnkit.families.caption import codec, commands
from attnkit.families.caption.api import API, caption_record
from attnkit.families.caption.config import CaptionRun
from attnkit.families.caption.infer import caption_images
from attnkit.families.caption.model import ShowAttendTell, build
from attnkit.families.caption.task import CaptionTask
from attnkit.families.protocol import ExploreOptions


def _cells(grid: int) -> list[str]:
    return [f"r{r}c{c}" for r in range(grid) for c in range(grid)]


class CaptionFamily:
    name = "captioning"
    kinds = ("show_attend_tell",)
    run_schema = CaptionRun
    api = API

    def task(self, run: CaptionRun, run_dir: Path, data_dir: str | None) -> CaptionTask:
        return CaptionTask(run, run_dir, data_dir)

    def vocabs_to_json(self, vocabs: codec.CaptionVocabs, run_dir: Path) -> dict:
        return codec.vocabs_to_json(vocabs, run_dir)

    def vocabs_from_json(self, info: dict, run_dir: Path) -> codec.CaptionVocabs:
        return codec.vocabs_from_json(info, run_dir)

    def build(self, run: CaptionRun, vocabs: codec.CaptionVocabs) -> ShowAttendTell:
        return build(run, vocabs)

    def add_commands(self, sub: argparse._SubParsersAction) -> None:
        commands.add_commands(sub, self)

    def add_evaluate_arguments(self, parser: argparse.ArgumentParser) -> list[str]:
        return commands.add_evaluate_arguments(parser)

    def evaluate(self, args: argparse.Namespace, load: Callable[[], LoadedRun]) -> dict:
        return commands.evaluate(args, load)

    def records(self, loaded: LoadedRun, lines: Sequence[str], options: ExploreOptions) -> list[dict]:
        """Per image path: the caption record plus the report's fields (source, text, n-best, a
        words x cells map under "cross")."""
        out = []
        for i, (line, r) in enumerate(zip(lines, caption_images(loaded, list(lines), options.decode))):
            maps = {"cross": {"rows": r.words, "cols": _cells(r.grid), "layers": [[r.attention]]}}
            nbest = [{"text": c, "score": s, "finished": True} for c, s in r.nbest]
            out.append({**caption_record(i, line, r), "source": line, "text": r.caption, "nbest": nbest, "maps": maps})
        return out

    def views(self, loaded: LoadedRun, lines: Sequence[str], options: ExploreOptions) -> list[list]:
        from attnkit.viz.plot import AttentionView

        views = []
        for r in caption_images(loaded, list(lines), options.decode):
            weights = torch.tensor(r.attention).unsqueeze(0)  # (1, T, P)
            views.append([AttentionView("cross", r.words, _cells(r.grid), [weights], "attention over the image grid", ("cell", "word"))])
        return views

    def info(self, loaded: LoadedRun) -> dict:
        return {"decode": loaded.run.decode.model_dump(), "encoder": loaded.vocabs.encoder, "grid": loaded.model.grid}


FAMILY = CaptionFamily()
