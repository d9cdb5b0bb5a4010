"""Every ```bash block of docs/ and the README is run by a named test or says why it is not.

The line above a block (a blank line between) is an HTML comment: `<!-- run by: tests/docs/X.py -->`,
and X.py's `runs(page)` lists the block among those it runs; or `<!-- not run: <reason> -->`. A block
with neither fails (docs/design/docs-site.md#shell-blocks-are-run-or-say-why-not).
"""

from __future__ import annotations

import importlib.util
import re
import textwrap
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PAGES = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]
BLOCK = re.compile(r"^( *)```bash\n(.*?)^ *```", re.S | re.M)
MARK = re.compile(r"<!-- (?:run by: (?P<test>\S+)|not run: (?P<reason>\S.*?)) -->")


def _runner(test: str):
    spec = importlib.util.spec_from_file_location(f"_runs_{Path(test).stem}", REPO / test)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def problems(page: Path, text: str, runner=_runner) -> list[str]:
    """What is wrong with the marks of the bash blocks of `text` (the page `page`)."""
    found = []
    for m in BLOCK.finditer(text):
        where = f"{page.relative_to(REPO)}:{text.count(chr(10), 0, m.start()) + 1}"
        above = text[: m.start()].rstrip().rsplit("\n", 1)[-1].strip()
        mark = MARK.fullmatch(above)
        if not mark:
            found.append(f"{where}: a bash block says neither <!-- run by: TEST --> nor <!-- not run: REASON -->")
        elif mark["test"] and not (REPO / mark["test"]).is_file():
            found.append(f"{where}: {mark['test']} does not exist")
        elif mark["test"]:
            ran = {textwrap.dedent(block) for block in runner(mark["test"]).runs(page)}
            if textwrap.dedent(m.group(2)) not in ran:
                found.append(f"{where}: {mark['test']} does not run this block")
    return found


def test_every_bash_block_is_run_by_a_test_or_says_why_not():
    runners = {}

    def runner(test: str):
        if test not in runners:
            runners[test] = _runner(test)
        return runners[test]

    found = [p for page in PAGES for p in problems(page, page.read_text(encoding="utf-8"), runner)]
    assert not found, "\n".join(found)
    assert sum(len(BLOCK.findall(page.read_text(encoding="utf-8"))) for page in PAGES) > 100


def test_an_unmarked_or_falsely_marked_block_fails():
    page = REPO / "docs" / "tour" / "1-seq2seq.md"
    block = "```bash\n.venv/bin/python docs/tour/code/bottleneck.py\n```\n"
    assert problems(page, f"<!-- not run: needs a GPU -->\n\n{block}") == []
    assert "neither" in problems(page, f"Run it:\n\n{block}")[0]
    assert "neither" in problems(page, f"<!-- not run: -->\n\n{block}")[0]  # a reason is required
    assert "does not exist" in problems(page, f"<!-- run by: tests/docs/test_gone.py -->\n\n{block}")[0]
    assert "does not run this block" in problems(page, f"<!-- run by: tests/docs/test_tour.py -->\n\n{block}")[0]
