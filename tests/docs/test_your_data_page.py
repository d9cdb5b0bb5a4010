"""Every `attnkit init` command of docs/your-data.md and of the README runs as it is from the repository root on
the shipped examples, and writes a config that `attnkit config` accepts (the training runs themselves
are `tests/families/*/test_*_own_data.py`)."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest

from attnkit.cli import main

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "docs" / "your-data.md", ROOT / "README.md"]


def init_commands(page: Path) -> list[list[str]]:
    """The page's `attnkit init ...` command lines (continued lines joined; `.venv/bin/attnkit` as `attnkit`), as argv lists."""
    text = page.read_text(encoding="utf-8").replace("\\\n", " ").replace(".venv/bin/attnkit ", "attnkit ")
    return [shlex.split(line.strip())[1:] for line in text.splitlines() if line.strip().startswith("attnkit init ")]


@pytest.mark.parametrize("page", PAGES, ids=lambda page: page.name)
def test_the_page_shows_init_for_every_family(page: Path) -> None:
    assert sorted({argv[1] for argv in init_commands(page)}) == ["captioning", "classification", "parsing", "translation"]


@pytest.mark.parametrize("argv", [argv for page in PAGES for argv in init_commands(page)], ids=lambda argv: " ".join(argv[1:4]))
def test_init_command_of_the_page_runs(argv: list[str], tmp_path: Path, monkeypatch, capsys) -> None:
    monkeypatch.chdir(ROOT)
    assert argv[-2:] == ["--out", "my.yaml"]
    config = tmp_path / "my.yaml"
    assert main([*argv[:-1], str(config)]) == 0
    assert main(["config", str(config)]) == 0
