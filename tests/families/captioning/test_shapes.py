"""Generated shapes end to end through the CLI: write the data, train a small captioner for a few
hundred steps on one thread, then check held-out BLEU-4 >= 90 and that the words naming an object
put most of their attention on that object's cells; caption, evaluate, report and the attention
PNG work on the run, and bad input is one clear line."""

from __future__ import annotations

import base64
import io
import json
import random
import re

import numpy as np
import pytest
import yaml
from PIL import Image

from attnkit.cli import main
from attnkit.commands.training import config_path
from attnkit.families import load_run
from attnkit.families.captioning.infer import caption_images
from attnkit.families.captioning.shapes import place_cells, random_scene


@pytest.mark.slow
def test_held_out_bleu4_and_attention_on_the_named_object(shapes_run):
    root, scenes = shapes_run
    metrics = [json.loads(line) for line in (root / "run" / "metrics.jsonl").read_text().splitlines()]
    assert max(m["bleu4"] for m in metrics if m["kind"] == "valid") >= 90.0
    loaded = load_run(root / "run")
    files = [root / "data" / "images_valid" / f"valid{i:05d}.png" for i in range(len(scenes))]
    results = caption_images(loaded, files, loaded.run.decode.with_overrides(beam=1))
    masses = []
    for scene, r in zip(scenes, results):
        if r.caption != scene.caption:
            continue
        start = 0
        for thing in scene.objects:  # "a <colour> <shape> at the <place>": the colour and the shape word
            k = r.words.index(thing.colour, start)
            cells = place_cells(thing, r.grid)
            masses += [sum(r.attention[j][c] for c in cells) for j in (k, k + 1)]
            start = k + 2
    assert len(masses) >= 0.8 * 2 * 2 * len(scenes)  # most captions exact
    assert sum(masses) / len(masses) > 0.5
    assert sum(m > 0.5 for m in masses) / len(masses) > 0.8


@pytest.mark.slow
def test_caption_evaluate_report_and_png(shapes_run, tmp_path, capsys):
    root, scenes = shapes_run
    image = str(root / "data" / "images_valid" / "valid00000.png")
    assert main(["caption", str(root / "run"), image, "--beam", "3", "--nbest", "2", "--out", str(tmp_path / "a.png")]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert len(lines) == 2 and lines[0].split("\t")[2] == scenes[0].caption
    assert (tmp_path / "a.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert main(["evaluate", str(root / "run"), "--images", str(root / "data" / "images_valid"),
                 "--captions", str(root / "data" / "captions_valid.txt"), "--beam", "1"]) == 0  # fmt: skip
    scores = json.loads(capsys.readouterr().out)
    assert scores["bleu4"] >= 90.0 and {"bleu1", "cider", "rouge_l"} <= set(scores)
    assert main(["report", str(root / "run"), image, "--out", str(tmp_path / "r.html")]) == 0
    assert scenes[0].caption in (tmp_path / "r.html").read_text()


def _picture(uri: str) -> np.ndarray:
    head, data = uri.split(",", 1)
    assert head == "data:image/jpeg;base64"
    return np.asarray(Image.open(io.BytesIO(base64.b64decode(data))).convert("L"), dtype=np.float32)


@pytest.mark.slow
def test_report_shows_each_word_over_the_image(shapes_run, tmp_path):
    root, scenes = shapes_run
    image = str(root / "data" / "images_valid" / "valid00000.png")
    page = tmp_path / "r.html"
    assert main(["report", str(root / "run"), image, "--out", str(page), "--beam", "1"]) == 0
    text = page.read_text()
    assert "renderOverlays" in text and "http" not in text.replace("http://www.w3.org", "")  # offline: everything inline
    record = json.loads(re.search(r'id="attention-data">(.*?)</script>', text, re.S).group(1))[0]
    cross = record["maps"]["cross"]  # one layer of one head, as bytes: words x cells
    words = cross["rows"]
    assert record["text"] == scenes[0].caption and [o["word"] for o in record["overlays"]] == words
    size = load_run(root / "run").run.model.input_size
    assert _picture(record["image"]).shape == (size, size)
    thing = scenes[0].objects[0]  # the first object's colour word looks at it: its cell is the brightest
    grid, k = record["grid"], words.index(thing.colour)
    picture, step = _picture(record["overlays"][k]["src"]), size // record["grid"]
    brightness = [picture[r * step : (r + 1) * step, c * step : (c + 1) * step].mean() for r in range(grid) for c in range(grid)]
    attention = np.frombuffer(base64.b64decode(cross["data"][0][0]), np.uint8).reshape(len(words), grid * grid)[k].tolist()
    assert max(range(grid * grid), key=brightness.__getitem__) == max(range(grid * grid), key=attention.__getitem__)
    assert max(range(grid * grid), key=attention.__getitem__) in place_cells(thing, grid)


def _truncated_jpeg() -> bytes:
    out = io.BytesIO()
    Image.effect_noise((64, 64), 40).convert("RGB").save(out, format="JPEG")
    return out.getvalue()[: len(out.getvalue()) // 2]


@pytest.mark.slow
@pytest.mark.parametrize("kind, message", [("text", "not an image"), ("truncated", "broken image data"), ("bomb", "decompression bomb")])
def test_bad_image_is_one_line_and_writes_nothing(shapes_run, tmp_path, capsys, monkeypatch, kind, message):
    root, _ = shapes_run
    bad = tmp_path / "bad.jpg"
    if kind == "bomb":
        monkeypatch.setattr(Image, "MAX_IMAGE_PIXELS", 5000)
        Image.new("RGB", (100, 100)).save(bad, format="PNG")
    else:
        bad.write_bytes(b"not an image" if kind == "text" else _truncated_jpeg())
    good = str(root / "data" / "images_valid" / "valid00000.png")
    code = main(["caption", str(root / "run"), good, str(bad), "--out", str(tmp_path / "out.png")])
    err = capsys.readouterr()
    assert code != 0 and message in err.err and str(bad) in err.err and err.out == ""
    assert not list(tmp_path.glob("out*.png"))


def test_scenes_are_seeded():
    a = [random_scene(random.Random(3)).caption for _ in range(2)]
    assert a[0] == a[1] and " at the " in a[0]


@pytest.mark.slow
@pytest.mark.parametrize("case, message", [("empty", "empty caption file"), ("missing", "is not in"), ("uncaptioned", "has no caption")])
def test_bad_caption_data_stops_training_with_one_line(shapes_run, tmp_path, capsys, case, message):
    root, _ = shapes_run
    data = root / "data"
    captions = (data / "captions_valid.txt").read_text().splitlines(keepends=True)
    missing = captions[0] + "nowhere.png#0\ta red circle at the top\n" + "".join(captions[1:])
    text = {"empty": "", "missing": missing, "uncaptioned": "".join(captions[1:])}[case]
    (tmp_path / "captions.txt").write_text(text)
    tree = yaml.safe_load(config_path("caption-shapes").read_text())
    tree["data"].update(dir=str(data), valid_captions=str(tmp_path / "captions.txt"))
    (tmp_path / "c.yaml").write_text(yaml.safe_dump(tree))
    assert main(["train", str(tmp_path / "c.yaml"), "--out", str(tmp_path / "run")]) != 0
    err = capsys.readouterr().err.strip().splitlines()
    assert message in err[-1] and "captions.txt" in err[-1] or str(data) in err[-1]
