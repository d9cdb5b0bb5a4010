"""The docs site builds in strict mode: a broken link or anchor, a page missing from the nav, a nav
entry without its page, a link to a repository file that is not there, or a docstring naming a
parameter its function lacks fails the build (mkdocs.yml; docs/design/docs-site.md)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

NO_DOCS_EXTRA = "the docs extra is not installed: pip install -e '.[docs]' (make install does)"


def test_the_readme_is_a_landing_page():
    """At most about 15 KB (issue 53), with the two set-up commands CI and newcomers rely on."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    assert len(text.encode()) <= 15_000, f"README.md is {len(text.encode()):,} bytes: move the detail into docs/"
    assert "make demo " in text and "make test " in text


def test_the_readmes_links_point_at_files_that_exist():
    """The README is not part of the site, so mkdocs does not check its links: this does."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    targets = {m.split("#")[0] for m in re.findall(r"\]\(([^)\s]+)\)", text) if not re.match(r"^[a-z]+:", m)}
    missing = sorted(t for t in targets if t and not (REPO / t).exists())
    assert not missing, f"README.md links to {missing}, which are not in the repository"


@pytest.mark.slow
def test_the_site_builds_strict(tmp_path):
    for module in ("mkdocs", "material", "mkdocstrings_handlers.python"):
        pytest.importorskip(module, reason=NO_DOCS_EXTRA)
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1", "PYTHONPATH": str(REPO / "src")}
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file", str(REPO / "mkdocs.yml"), "--site-dir", str(tmp_path / "site")],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    warnings = [line for line in done.stderr.splitlines() if line.startswith(("WARNING", "ERROR"))]
    assert done.returncode == 0, "\n".join(warnings) or done.stderr[-3000:]
    site = tmp_path / "site"
    cli = (site / "reference" / "cli.html").read_text(encoding="utf-8")
    assert "attnkit train" in cli and "--resume" in cli  # generated from build_parser()
    assert "MultiHeadAttention" in (site / "reference" / "api.html").read_text(encoding="utf-8")  # from docstrings
    assert (site / "tour" / "ko" / "index.html").exists() and (site / "search" / "search_index.js").exists()
