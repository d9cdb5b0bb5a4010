"""`attnkit report`: one self-contained HTML file (inline CSS, JS and data; opens from disk offline).

The page shows one card per record: by default the common card of `templates/attention.js` (the
same script the web UI serves): the input, the output, the n-best list and the interactive
attention view. A family whose records carry more gives its renderer script (`Api.renderer`: class
probabilities, an image strip, a tree drawing), inlined after it, and its stylesheet
(`Api.renderer_style`), inlined after the core's. The records are embedded verbatim
as JSON in `<script type="application/json" id="attention-data">`, so a report is also a data file.
A run's training curves (`viz.curves`: loss, learning rate, validation metrics) come first, drawn by
`templates/curves.js` from `<script type="application/json" id="curves-data">` (an empty list: none).
"""

from __future__ import annotations

import html
import json
import re
from collections.abc import Sequence
from importlib import resources
from pathlib import Path

from attnkit.io import atomic_write_text

TEMPLATES = resources.files("attnkit.viz") / "templates"


def template(name: str) -> str:
    """A packaged template or asset (`report.html`, `attention.js`, `attention.css`) as text."""
    return (TEMPLATES / name).read_text(encoding="utf-8")


def shared_script() -> str:
    """The views every page shares: the canvas views (`attention-views.js`), the card (`attention.js`), the curves (`curves.js`)."""
    return "\n".join(template(name) for name in ("attention-views.js", "attention.js", "curves.js"))


def embed_json(value) -> str:
    """JSON that is safe inside a <script> element ("</" escaped as "<\\/", still valid JSON)."""
    return json.dumps(value, ensure_ascii=False).replace("</", "<\\/")


def render_report(records: list[dict], title: str, renderer: str = "", curves: Sequence[dict] = (), style: str = "") -> str:
    """The report page for `records` (a family's `records`: the same JSON the web UI gets), drawn by
    `renderer` (the family's script that sets `AttnView.render`; "": the common card) with `style`
    (its stylesheet, `Api.renderer_css`), after the training `curves` (`Curves.to_json()` of each
    run; none: no curves section)."""
    page = template("report.html")
    parts = {"style": template("attention.css") + style, "script": shared_script() + "\n" + renderer,
             "title": html.escape(title), "data": embed_json(records), "curves": embed_json(list(curves))}  # fmt: skip
    return re.sub(r"\{\{(\w+)\}\}", lambda m: parts[m.group(1)], page)  # one pass: what is put in is not searched again


def write_report(
    records: list[dict], path: str | Path, title: str = "attnkit report", renderer: str = "", curves: Sequence[dict] = (), style: str = ""
) -> Path:
    """Write the report atomically; returns its path."""
    path = Path(path)
    atomic_write_text(path, render_report(records, title, renderer, curves, style))
    return path
