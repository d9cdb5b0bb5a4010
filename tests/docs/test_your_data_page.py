"""Every "your data" command of docs/your-data.md and of the README runs as it is from the repository
root on the shipped examples: each `attnkit init` writes a config that `attnkit config` accepts, each
`attnkit train FAMILY ...` trains (a tiny model for a few steps: the `--set` values of `TINY`, the
short budget) and each `attnkit plot` of that run draws its attention. The bad-file cases are
`tests/families/*/test_*_own_data.py`."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from attnkit.cli import main
from own_data import TINY, sets

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "docs" / "your-data.md", ROOT / "README.md"]
ANSI_C = re.compile(r"\$'((?:[^'\\]|\\.)*)'")  # bash's $'...\t...'


def blocks(page: Path) -> list[str]:
    return re.findall(r"```bash\n(.*?)```", page.read_text(encoding="utf-8"), re.S)


def commands_in(block: str) -> list[list[str] | None]:
    """The lines of a bash block as argv lists of `attnkit` (continued lines joined; `.venv/bin/attnkit`
    read as `attnkit`, bash's `$'...'` quoting as bash reads it); None for a line that is not `attnkit ...`."""
    lines = block.replace("\\\n", " ").replace(".venv/bin/attnkit ", "attnkit ").splitlines()
    quoted = (ANSI_C.sub(lambda m: shlex.quote(m.group(1).encode().decode("unicode_escape")), line.split(" #")[0]).strip() for line in lines)
    return [shlex.split(line)[1:] if line.startswith("attnkit ") else None for line in quoted if line and not line.startswith("#")]


def commands(page: Path) -> list[list[str]]:
    """The `attnkit ...` lines of the page's bash blocks as argv lists."""
    return [argv for block in blocks(page) for argv in commands_in(block) if argv is not None]


def runs(page: Path) -> list[str]:
    """The bash blocks of `page` whose every line the tests below run (tests/docs/test_bash_blocks.py)."""
    if page not in PAGES:
        return []
    ran = [*inits(PAGES[0]), *trains(page), *plots(page)]
    return [block for block in blocks(page) if all(argv in ran for argv in commands_in(block))]


def inits(page: Path) -> list[list[str]]:
    return [argv for argv in commands(page) if argv[0] == "init"]


def trains(page: Path) -> list[list[str]]:
    return [argv for argv in commands(page) if argv[0] == "train" and argv[1] in TINY]


def plots(page: Path) -> list[list[str]]:
    return [argv for argv in commands(page) if argv[0] == "plot" and argv[1].startswith("runs/my-")]


def out(argv: list[str]) -> str:
    return argv[argv.index("--out") + 1]


@pytest.mark.parametrize("page", PAGES, ids=lambda page: page.name)
def test_the_page_trains_and_plots_every_family(page: Path) -> None:
    family_of = {out(argv): argv[1] for argv in trains(page)}
    assert sorted(set(family_of.values())) == sorted(TINY)
    assert sorted({family_of[argv[1]] for argv in plots(page)}) == sorted(TINY)  # each plot is of a run the page trains


def test_the_page_shows_init_for_every_family() -> None:
    assert sorted({argv[1] for argv in inits(PAGES[0])}) == sorted(TINY)


@pytest.mark.parametrize("argv", inits(PAGES[0]), ids=lambda argv: " ".join(argv[1:4]))
def test_init_command_of_the_page_runs(argv: list[str], tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(ROOT)
    assert out(argv) == "my.yaml"
    config = tmp_path / "my.yaml"
    assert main([*argv[:-1], str(config)]) == 0
    assert main(["config", str(config)]) == 0


TRAINS = sorted({tuple(argv) for page in PAGES for argv in trains(page)})


@pytest.mark.parametrize("argv", [list(argv) for argv in TRAINS], ids=lambda argv: out(argv))
def test_train_and_plot_commands_of_the_pages_run(argv: list[str], tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(ROOT)
    run = tmp_path / Path(out(argv)).name
    assert main([*argv[:-1], str(run), *sets(argv[1])]) == 0
    assert (run / "config.yaml").is_file()
    for plot in {tuple(p) for page in PAGES for p in plots(page) if p[1] == out(argv)}:
        figure = tmp_path / Path(out(list(plot))).name
        assert main(["plot", str(run), *plot[2:-1], str(figure)]) == 0
        assert figure.stat().st_size > 1000
