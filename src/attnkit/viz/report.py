"""`attnkit report`: one self-contained HTML file (inline CSS, JS and data; opens from disk offline).

The page shows, per sentence, the output, the n-best list and the interactive attention view of
`templates/attention.js` (the same script the web UI serves); for a sentence classifier, the label,
the class probabilities and the words shaded by each attention hop; for a record with an ``image`` and
per-word ``overlays`` (data URIs, e.g. a captioner's), the image strip of Show, Attend and Tell; for a
record with an ``svg`` (a parser's), the tree drawing. The records are embedded verbatim as
JSON in `<script type="application/json" id="attention-data">`, so a report is also a data file.
"""

from __future__ import annotations

import html
import json
from importlib import resources
from pathlib import Path

from attnkit.io import atomic_write_text

TEMPLATES = resources.files("attnkit.viz") / "templates"


def template(name: str) -> str:
    """A packaged template or asset (`report.html`, `attention.js`, `attention.css`) as text."""
    return (TEMPLATES / name).read_text(encoding="utf-8")


def embed_json(value) -> str:
    """JSON that is safe inside a <script> element ("</" escaped as "<\\/", still valid JSON)."""
    return json.dumps(value, ensure_ascii=False).replace("</", "<\\/")


def render_report(records: list[dict], title: str) -> str:
    """The report page for `records` (a family's `records`: the same JSON the web UI gets)."""
    page = template("report.html")
    parts = {"{{style}}": template("attention.css"), "{{script}}": template("attention.js"),
             "{{title}}": html.escape(title), "{{data}}": embed_json(records)}  # fmt: skip
    for key, value in parts.items():
        page = page.replace(key, value)
    return page


def write_report(records: list[dict], path: str | Path, title: str = "attnkit report") -> Path:
    """Write the report atomically; returns its path."""
    path = Path(path)
    atomic_write_text(path, render_report(records, title))
    return path
