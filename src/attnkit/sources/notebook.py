"""`attnkit.show(source, text, **options)`: the explorer page inline in a Jupyter notebook.

`show` returns an `Explorer`, whose `_repr_html_` is an `<iframe>` with the whole page in its
`srcdoc`: the page `attnkit report` writes (inline CSS, scripts and data, `viz.report`), so the cell
needs no widget server and no network, and the saved notebook keeps the page. The frame runs
scripts and may download (the PNG and SVG buttons), nothing else (`sandbox`).
"""

from __future__ import annotations

import html
from pathlib import Path
from typing import Any

from attnkit.sources.options import AttentionOptions
from attnkit.sources.page import MAX_CELLS, page_record
from attnkit.sources.source import open_source


class Explorer:
    """One input's attention page: shown by Jupyter (`_repr_html_`), or `html` / `save(path)`."""

    def __init__(self, record: dict, title: str, height: int = 720) -> None:
        self.record, self.title, self.height = record, title, height

    @property
    def html(self) -> str:
        """The page, as `attnkit report` writes it."""
        from attnkit.viz.report import render_report

        return render_report([self.record], self.title)

    def _repr_html_(self) -> str:
        return (f'<iframe srcdoc="{html.escape(self.html, quote=True)}" sandbox="allow-scripts allow-downloads" '
                f'style="width: 100%; height: {int(self.height)}px; border: 1px solid #d5d8de"></iframe>')  # fmt: skip

    def save(self, path: str | Path) -> Path:
        """Write the page as a file (the same as `attnkit report`)."""
        from attnkit.viz.report import write_report

        return write_report([self.record], path, self.title)


def show(source: Any, text: str | None = None, *, target: str | None = None, image: str | None = None, truncate: bool = False,
         words: bool = False, flow: bool | str = False, attribute: tuple[str, ...] = (), output: int | None = None,
         max_cells: int = MAX_CELLS, checkpoint: str = "best", height: int = 720) -> Explorer:  # fmt: skip
    """The explorer page of `text` through `source`: a run folder, a Hugging Face model folder or hub
    id (or a `Source` already opened by `attnkit.sources.open_source`). `flow`: True (the explained output's
    row) or "all" (every row), as `--flow`."""
    loaded = open_source(source, checkpoint) if isinstance(source, str | Path) else source
    options = AttentionOptions(target=target, image=image, truncate=truncate, words=words, flow=flow, attribute=tuple(attribute),
                               output=output, checkpoint=checkpoint)  # fmt: skip
    return Explorer(page_record(loaded, text, options, max_cells), f"attnkit: {loaded.name}", height)
