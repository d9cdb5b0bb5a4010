"""examples/ is what scripts/make_examples.py writes: the text files byte for byte, the images pixel
for pixel (PNG compression may differ between Pillow versions), and every file a few KB."""

from __future__ import annotations

import runpy
import sys
from pathlib import Path

import numpy as np
from PIL import Image

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"


def test_examples_are_what_the_script_writes(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(sys, "argv", ["make_examples.py", str(tmp_path)])
    runpy.run_path(str(ROOT / "scripts" / "make_examples.py"), run_name="__main__")
    written = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*") if p.is_file())
    assert written == sorted(p.relative_to(EXAMPLES) for p in EXAMPLES.rglob("*") if p.is_file())
    for name in written:
        if name.suffix == ".png":
            assert np.array_equal(np.asarray(Image.open(tmp_path / name).convert("RGB")), np.asarray(Image.open(EXAMPLES / name).convert("RGB"))), name
        else:
            assert (tmp_path / name).read_bytes() == (EXAMPLES / name).read_bytes(), name
        assert (EXAMPLES / name).stat().st_size < 8_000, name
