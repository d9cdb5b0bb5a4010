"""scripts/check_wheel.py (`make wheel-check`, a step of `make test`) refuses a wheel or an sdist that
lacks a package file git tracks: what a forgotten package-data glob in pyproject.toml leads to."""

from __future__ import annotations

import io
import runpy
import tarfile
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CHECK = runpy.run_path(str(ROOT / "scripts" / "check_wheel.py"))
TRACKED = {"attnkit/__init__.py", "attnkit/serve/static/page.js", "attnkit/viz/templates/report.html"}


def _archives(tmp: Path, in_wheel: set[str], in_sdist: set[str]) -> tuple[Path, Path]:
    wheel, sdist = tmp / "attnkit-0.1.0-py3-none-any.whl", tmp / "attnkit-0.1.0.tar.gz"
    with zipfile.ZipFile(wheel, "w") as z:
        for name in in_wheel:
            z.writestr(name, "x")
    with tarfile.open(sdist, "w:gz") as t:
        for name in in_sdist:
            info = tarfile.TarInfo(f"attnkit-0.1.0/src/{name}")
            info.size = 1
            t.addfile(info, io.BytesIO(b"x"))
    return sdist, wheel


def test_every_tracked_file_in_both_passes(tmp_path: Path) -> None:
    CHECK["check_contents"](*_archives(tmp_path, TRACKED, TRACKED), TRACKED)


@pytest.mark.parametrize("lacking", ["wheel", "sdist"])
def test_a_missing_package_file_fails_naming_it(tmp_path: Path, lacking: str) -> None:
    short = TRACKED - {"attnkit/serve/static/page.js"}
    sdist, wheel = _archives(tmp_path, short if lacking == "wheel" else TRACKED, short if lacking == "sdist" else TRACKED)
    with pytest.raises(CHECK["CheckFailed"], match=r"\.(whl|tar\.gz): 1 package file\(s\) missing \(attnkit/serve/static/page\.js\)"):
        CHECK["check_contents"](sdist, wheel, TRACKED)
