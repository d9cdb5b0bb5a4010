"""Fixtures of tiny Hugging Face model folders (built by `hf_tiny`) and an image file."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from hf_tiny import build


@pytest.fixture(scope="session")
def hf_folder(tmp_path_factory):
    """`hf_folder(name)`: the folder of the tiny model `name`, built once per session."""
    built: dict[str, Path] = {}

    def get(name: str) -> Path:
        if name not in built:
            built[name] = build(name, tmp_path_factory.mktemp("hf") / name)
        return built[name]

    return get


@pytest.fixture(scope="session")
def image_file(tmp_path_factory) -> Path:
    from PIL import Image

    path = tmp_path_factory.mktemp("img") / "noise.png"
    torch.manual_seed(0)
    Image.fromarray((torch.rand(40, 48, 3) * 255).to(torch.uint8).numpy()).save(path)
    return path
