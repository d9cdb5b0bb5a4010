"""Captioning one's own images, through the CLI: `attnkit init captioning` on the shipped examples
(a folder of PNGs with a Karpathy `dataset.json`, or `IMAGE<TAB>caption` files), `attnkit train` on
the config it wrote with a tiny model, then the attention over the image grid; and each bad file as
one error line naming the file and the line, before a config or a run is written
(docs/your-data.md)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import yaml

from attnkit.cli import main

EXAMPLES = Path(__file__).resolve().parents[3] / "examples" / "captioning"
IMAGES = str(EXAMPLES / "images")
TINY = ["model.encoder=small_cnn", "model.input_size=48", "model.cnn_layers=4", "model.cnn_channels=8", "model.feature_dim=16",
        "model.embed_dim=16", "model.hidden_dim=32", "model.attn_dim=16", "train.max_steps=4", "train.eval_every=4", "train.eval_decode=false", "train.precision=fp32"]  # fmt: skip


@pytest.mark.parametrize(
    "captions",
    [["--captions", str(EXAMPLES / "dataset.json")], ["--train", str(EXAMPLES / "train.txt"), "--valid", str(EXAMPLES / "valid.txt")]],
    ids=["karpathy-json", "image-tab-caption"],
)
def test_init_train_attention(tmp_path: Path, captions: list[str]) -> None:
    config, run = tmp_path / "my.yaml", tmp_path / "run"
    assert main(["init", "captioning", "--images", IMAGES, *captions, "--out", str(config)]) == 0
    assert "# training: 18 images, 18 captions; validation: 6 images, 6 captions" in config.read_text()
    assert yaml.safe_load(config.read_text())["data"]["images"] == IMAGES
    assert main(["train", str(config), "--out", str(run), *[w for s in TINY for w in ("--set", s)]]) == 0
    assert main(["attention", str(run), str(EXAMPLES / "images" / "shape20.png"), "--out", str(tmp_path / "a.npz")]) == 0
    maps = np.load(tmp_path / "a.npz")
    assert maps["cross/layer1"].shape[-1] == 9  # the 3 x 3 grid of a 48-pixel image through 4 stride-2 layers
    np.testing.assert_allclose(maps["cross/layer1"].sum(-1), 1.0, atol=1e-4)


def test_an_image_that_is_not_there(write_file, cli_error, tmp_path: Path) -> None:
    captions = write_file(tmp_path, "train.txt", "shape00.png\ta green circle at the left\nshape99.png\ta red square\n")
    err = cli_error(["init", "captioning", "--images", IMAGES, "--train", captions, "--valid", str(EXAMPLES / "valid.txt")])
    assert f"{captions}, line 2: image 'shape99.png' is not in {IMAGES}" in err


def test_an_image_that_is_not_there_at_train(write_file, cli_error, tmp_path: Path) -> None:
    data = json.loads((EXAMPLES / "dataset.json").read_text())
    data["images"][3]["filename"] = "gone.png"
    captions = write_file(tmp_path, "dataset.json", json.dumps(data))
    config = write_file(tmp_path, "c.yaml", f"data: {{images: {IMAGES}, captions: {captions}}}\nmodel: {{kind: show_attend_tell, encoder: small_cnn}}\n"
                    "train: {max_steps: 1}\n")  # fmt: skip
    err = cli_error(["train", config, "--out", str(tmp_path / "run")])
    assert f"{captions}, image 4: image 'gone.png' is not in {IMAGES}" in err
    assert not (tmp_path / "run" / "config.yaml").exists()  # refused before any work


def test_an_empty_caption(write_file, cli_error, tmp_path: Path) -> None:
    captions = write_file(tmp_path, "train.txt", "shape00.png\ta green circle at the left\nshape01.png\t \n")
    err = cli_error(["init", "captioning", "--images", IMAGES, "--train", captions, "--valid", str(EXAMPLES / "valid.txt")])
    assert f"{captions}, line 2: empty caption" in err


def test_not_a_karpathy_file(write_file, cli_error, tmp_path: Path) -> None:
    captions = write_file(tmp_path, "dataset.json", '[{"image": "shape00.png"}]')
    err = cli_error(["init", "captioning", "--images", IMAGES, "--captions", captions])
    assert f"{captions}: expected a Karpathy split file" in err


def test_bad_utf8(write_file, cli_error, tmp_path: Path) -> None:
    captions = write_file(tmp_path, "train.txt", b"shape00.png\ta green circle\nshape01.png\ta yellow \xff circle\n")
    err = cli_error(["init", "captioning", "--images", IMAGES, "--train", captions, "--valid", str(EXAMPLES / "valid.txt")])
    assert f"{captions}, line 2: invalid UTF-8" in err
