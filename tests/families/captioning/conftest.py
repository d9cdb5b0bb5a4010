"""A captioner trained on generated shapes (2,000 images, 320 steps, one thread), shared by the
CLI, API and browser tests of this folder."""

from __future__ import annotations

import pytest
import torch
import yaml

from attnkit.cli import main
from attnkit.commands.training import config_path
from attnkit.families.captioning.shapes import write_shapes


@pytest.fixture(scope="session")
def shapes_run(tmp_path_factory):
    root = tmp_path_factory.mktemp("shapes")
    scenes = write_shapes(root / "data", {"train": 2000, "valid": 100}, seed=0)
    tree = yaml.safe_load(config_path("caption-shapes").read_text())
    tree["data"]["dir"] = str(root / "data")
    tree["train"].update(max_steps=320, eval_every=320, eval_max_sentences=100, log_every=1000)
    (root / "shapes.yaml").write_text(yaml.safe_dump(tree))
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        assert main(["train", str(root / "shapes.yaml"), "--out", str(root / "run")]) == 0
    finally:
        torch.set_num_threads(threads)
    return root, scenes["valid"]
