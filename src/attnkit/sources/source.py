"""Where attention comes from: one `Source` protocol, for an attnkit run folder or a Hugging Face model.

`open_source(path_or_id)` opens either; everything above it (`attnkit attention`'s npz, the explorer
page's record for `report`, `plot --view`, `serve`'s `/attention` and `attnkit.show`, and
`faithfulness`) asks the source, never its type:

- `kind`: what it is, "run" or "hf" (`GET /v1/sources` lists it);
- `name`: how pages name it (a run's folder name; a model as the user gave it);
- `write(text, writer, options)`: one input's maps into an `NpzWriter` (`sources.npz`, or the page's
  `MemoryWriter`), returning a summary;
- `check_explained()` and `explain(text, flow, truncate)`: the outputs `faithfulness` explains
  (`sources.explained`);
- `files()`: the files that make the model (faithfulness's fingerprint).

The two implementations hold what was loaded: `RunSource.loaded` (a `LoadedRun`, `families.load_run`:
the run's family gives its maps, `sources.run`) and `HfSource.hf` (an `HfModel`, `sources.hf.load`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

if TYPE_CHECKING:  # annotations only: `import attnkit.sources` stays free of torch
    from attnkit.sources.explained import Explained
    from attnkit.sources.npz import NpzWriter
    from attnkit.sources.options import AttentionOptions


class Source(Protocol):
    """A model the explorer reads attention from (module docstring)."""

    kind: ClassVar[str]

    @property
    def name(self) -> str: ...

    def write(self, text: str | None, writer: NpzWriter, options: AttentionOptions) -> dict: ...

    def check_explained(self) -> None: ...

    def explain(self, text: str, flow: bool, truncate: bool) -> list[Explained]: ...

    def files(self) -> list[Path]: ...


@dataclass(frozen=True)
class RunSource:
    """An attnkit run folder, loaded (`families.load_run`): its family's attention views."""

    loaded: Any  # a LoadedRun
    kind: ClassVar[str] = "run"

    @property
    def name(self) -> str:
        return self.loaded.folder.name

    def write(self, text: str | None, writer: NpzWriter, options: AttentionOptions) -> dict:
        from attnkit.sources.run import write_run

        return write_run(self.loaded, text, writer, options)

    def check_explained(self) -> None:
        from attnkit.sources.explained import check_run

        check_run(self.loaded)

    def explain(self, text: str, flow: bool, truncate: bool) -> list[Explained]:
        from attnkit.sources.explained import explain_run

        return explain_run(self.loaded, text, flow)  # a run's input has no positions to cut

    def files(self) -> list[Path]:
        return [self.loaded.folder / "run.json", *(p for p in self.loaded.checkpoint.iterdir() if p.is_file())]


@dataclass(frozen=True)
class HfSource:
    """A Hugging Face model, loaded (`sources.hf.load`): its attention modules, hooked."""

    hf: Any  # an HfModel
    kind: ClassVar[str] = "hf"

    @property
    def name(self) -> str:
        return self.hf.name

    def write(self, text: str | None, writer: NpzWriter, options: AttentionOptions) -> dict:
        from attnkit.sources.hf.export import write_hf

        return write_hf(self.hf, text, writer, options)

    def check_explained(self) -> None:
        from attnkit.sources.hf.explained import check_hf

        check_hf(self.hf)

    def explain(self, text: str, flow: bool, truncate: bool) -> list[Explained]:
        from attnkit.sources.hf.explained import explain_hf

        return [explain_hf(self.hf, text, flow, truncate)]

    def files(self) -> list[Path]:
        from attnkit.artifacts.hf import resolve

        return [p for p in resolve(self.hf.name).iterdir() if p.is_file()]


def is_run(source: str | Path) -> bool:
    """Whether `source` is an attnkit run folder (it has run.json)."""
    return (Path(source) / "run.json").is_file()


def open_source(source: str | Path, checkpoint: str = "best") -> Source:
    """An attnkit run folder (`checkpoint` of it), else a Hugging Face model folder or hub id, loaded."""
    if is_run(source):
        from attnkit.families import load_run

        return RunSource(load_run(source, checkpoint))
    from attnkit.sources.hf.load import load

    return HfSource(load(str(source)))
