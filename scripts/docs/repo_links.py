"""mkdocs hook: links from a page to a file of the repository outside docs/ (a result file, a figure
in benchmarks/results/, a script, the README) are checked and kept working on the site.

mkdocs knows only the files under docs/, so `[curve](../benchmarks/results/x.png)` would be a
broken link there. Each such target that exists is copied into the site under `repo/<its path>`
and the link rewritten to it; a target that does not exist is a warning, which `--strict` turns
into a failed build, like any other broken link.
"""

from __future__ import annotations

import logging
import posixpath
import re
from pathlib import Path

from mkdocs.structure.files import File

log = logging.getLogger("mkdocs.hooks.repo_links")
LINK = re.compile(r"(!?\[[^\]]*\])\(([^)\s#]+)((?:#[^)\s]*)?)\)")
SITE_FOLDER = "repo"


def on_files(files, config):
    """Copy every repository file that some page links to into the site, under `repo/`."""
    docs = Path(config["docs_dir"]).resolve()
    wanted: set[str] = set()
    for file in files.documentation_pages():
        text = file.content_string
        for _, target, _ in LINK.findall(text):
            path = _resolve(docs, file.src_uri, target)
            if path is not None and path.is_file() and not path.is_relative_to(docs) and path.suffix != ".md":
                wanted.add(path.relative_to(docs.parent).as_posix())
    for rel in sorted(wanted):
        files.append(File.generated(config, f"{SITE_FOLDER}/{rel}", abs_src_path=str(docs.parent / rel)))
    return files


def on_page_markdown(markdown, page, config, files):
    """Point each link outside docs/ at its copy under `repo/`; warn about one whose target is missing."""
    docs = Path(config["docs_dir"]).resolve()

    def rewrite(match: re.Match) -> str:
        text, target, anchor = match.groups()
        path = _resolve(docs, page.file.src_uri, target)
        if path is None:
            return match.group(0)
        if not path.exists():
            log.warning("%s links to '%s', which is not in the repository", page.file.src_uri, target)
            return match.group(0)
        if path.is_dir():  # a folder: the site holds no listing of it, so its name stays and the link goes
            return text[1:-1] if not text.startswith("!") else match.group(0)
        if path.is_relative_to(docs):
            return match.group(0)
        if path == docs.parent / "README.md":  # the README's place on the site is its home page
            return f"{text}({_up(page.file.src_uri)}index.md{anchor})"
        rel = path.relative_to(docs.parent).as_posix()
        return f"{text}({_up(page.file.src_uri)}{SITE_FOLDER}/{rel}{anchor})"

    return LINK.sub(rewrite, markdown)


def _resolve(docs: Path, src_uri: str, target: str) -> Path | None:
    """The repository path a relative link points at, when that is a folder or outside docs/; else None
    (mkdocs checks the links between pages and to files under docs/ itself)."""
    if re.match(r"^[a-z][a-z0-9+.-]*:", target) or target.startswith("/"):
        return None
    joined = posixpath.normpath(posixpath.join(posixpath.dirname(src_uri), target))
    path = (docs / joined).resolve()
    if not path.is_relative_to(docs.parent):
        return None
    return path if joined.startswith("../") or path.is_dir() else None


def _up(src_uri: str) -> str:
    return "../" * src_uri.count("/")
