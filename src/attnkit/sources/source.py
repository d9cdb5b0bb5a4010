"""Where attention comes from: one `Source` protocol, for an attnkit run folder or a Hugging Face model.

`open_source(path_or_id)` opens either; everything above it (`attnkit attention`'s npz, the explorer
page for `report`, `plot`, `serve`'s `/attention` and `attnkit.show`, and `heads` and `faithfulness`)
asks the source, never its type:

- `origin`: where it comes from, "run" or "hf" (`GET /v1/sources` lists it as `type`);
- `name`: how pages name it (a run's folder name; a model as the user gave it);
- `read(lines, options, store)`: per line its `ExplainedInput`, the one record every output is made of;
  called only by `sources.record.explain_inputs`, the one road;
- `check_scored()` and `scored_outputs(text, flow, truncate, removal)`: the outputs `faithfulness` scores
  (`sources.scored`), their attention taken from the record, tokens removed by `removal` (None: the source's
  default, pad for a run, mask for a Hugging Face model);
- `renderer()`: the script and stylesheet that draw what its records carry besides the common card
  (a run's family's renderer; nothing for a Hugging Face model), and `curves()`, its training curves;
- `files()`: the files that make the model (faithfulness's fingerprint).

The two implementations hold what was loaded: `RunSource.loaded` (a `LoadedRun`, `families.load_run`:
the run's family gives its maps, `sources.run`) and `HfSource.hf` (an `HfModel`, `sources.hf.load`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

if TYPE_CHECKING:  # annotations only: `import attnkit.sources` stays free of torch
    from attnkit.sources.options import AttentionOptions
    from attnkit.sources.scored import ScoredOutput
    from attnkit.sources.store import Store
    from attnkit.viz.attention_view import ExplainedInput


class Source(Protocol):
    """A model the explorer reads attention from (module docstring)."""

    origin: ClassVar[str]

    @property
    def name(self) -> str: ...

    def read(self, lines: list[str | None], options: AttentionOptions, store: Callable[[], Store]) -> list[ExplainedInput]: ...

    def check_scored(self) -> None: ...

    def scored_outputs(self, text: str, flow: bool, truncate: bool, removal: str | None = None) -> list[ScoredOutput]: ...

    def renderer(self) -> tuple[str, str]: ...

    def curves(self) -> list[dict]: ...

    def files(self) -> list[Path]: ...


@dataclass(frozen=True)
class RunSource:
    """An attnkit run folder, loaded (`families.load_run`): its family's attention views."""

    loaded: Any  # a LoadedRun
    origin: ClassVar[str] = "run"

    @property
    def name(self) -> str:
        return self.loaded.folder.name

    def read(self, lines: list[str | None], options: AttentionOptions, store: Callable[[], Store]) -> list[ExplainedInput]:
        from attnkit.sources.run import read_run

        return read_run(self.loaded, lines, options, store)

    def check_scored(self) -> None:
        from attnkit.sources.scored import check_run

        check_run(self.loaded)

    def scored_outputs(self, text: str, flow: bool, truncate: bool, removal: str | None = None) -> list[ScoredOutput]:
        from attnkit.sources.scored import scored_run

        return scored_run(self, text, flow, removal)  # a run's input has no positions to cut

    def renderer(self) -> tuple[str, str]:
        api = self.loaded.family.api
        return api.renderer_script(), api.renderer_css()

    def curves(self) -> list[dict]:
        from attnkit.viz.curves import run_curves

        curves = run_curves(self.loaded.folder, self.loaded.family.run_schema.METRICS, missing_ok=True)
        return [curves.to_json()] if curves else []

    def files(self) -> list[Path]:
        return [self.loaded.folder / "run.json", *(p for p in self.loaded.checkpoint.iterdir() if p.is_file())]


@dataclass(frozen=True)
class HfSource:
    """A Hugging Face model, loaded (`sources.hf.load`): its attention modules, hooked."""

    hf: Any  # an HfModel
    origin: ClassVar[str] = "hf"

    @property
    def name(self) -> str:
        return self.hf.name

    def read(self, lines: list[str | None], options: AttentionOptions, store: Callable[[], Store]) -> list[ExplainedInput]:
        from attnkit.sources.hf.read import read_hf

        return [read_hf(self.hf, line, options, store()) for line in lines]

    def check_scored(self) -> None:
        from attnkit.sources.hf.scored import check_hf

        check_hf(self.hf)

    def scored_outputs(self, text: str, flow: bool, truncate: bool, removal: str | None = None) -> list[ScoredOutput]:
        from attnkit.sources.hf.scored import scored_hf

        return [scored_hf(self, text, flow, truncate, removal or "mask")]

    def renderer(self) -> tuple[str, str]:
        return "", ""

    def curves(self) -> list[dict]:
        return []

    def files(self) -> list[Path]:
        from attnkit.artifacts.hf import resolve

        return [p for p in resolve(self.hf.name).iterdir() if p.is_file()]


def is_run(source: str | Path) -> bool:
    """Whether `source` is an attnkit run folder (it has run.json)."""
    return (Path(source) / "run.json").is_file()


def open_source(source: str | Path, checkpoint: str = "best", dtype: str = "fp32") -> Source:
    """An attnkit run folder (`checkpoint` of it, in `dtype`), else a Hugging Face model folder or hub id, loaded."""
    if is_run(source):
        from attnkit.config.args import DTYPES
        from attnkit.families import load_run

        return RunSource(load_run(source, checkpoint, dtype=DTYPES[dtype]))
    from attnkit.sources.hf.load import load

    return HfSource(load(str(source)))
