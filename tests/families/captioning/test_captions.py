"""Caption files: the Flickr8k token format (as in shared/data/flickr8k/captions_*.txt.gz), TSV and
JSONL with named columns, several captions per image, and errors that name file and line."""

from __future__ import annotations

import gzip
import io
import json
import zipfile

import pytest
from PIL import Image

from attnkit.errors import DataError
from attnkit.families.captioning.captions import (
    CaptionedImage,
    check_images,
    read_captioned_images,
    read_captions,
)
from attnkit.families.captioning.images import ImageSource

# The first lines of shared/data/flickr8k/captions_dev.txt.gz, in its format (the last has no final period).
TOKENS = (
    "2090545563_a4e66ec76b.jpg#0\tthe boy laying face down on a skateboard is being pushed along the ground by another boy .\n"
    "2090545563_a4e66ec76b.jpg#1\tTwo girls play on a skateboard in a courtyard .\n"
    "3393035454_2d2370ffd4.jpg#0\ta boy in a blue top is jumping off some rocks in the woods .\n"
    "2090545563_a4e66ec76b.jpg#2\ttwo young children on a skateboard going across a sidewalk\n"
)
IMAGES = ("2090545563_a4e66ec76b.jpg", "3393035454_2d2370ffd4.jpg")


def _jpeg() -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (8, 8), (9, 9, 9)).save(buffer, "JPEG")
    return buffer.getvalue()


@pytest.fixture
def image_zip(tmp_path):
    archive = tmp_path / "images.zip"
    with zipfile.ZipFile(archive, "w") as z:
        for name in IMAGES:
            z.writestr(name, _jpeg())
    return archive


def test_flickr8k_tokens_grouped_by_image(tmp_path):
    path = tmp_path / "captions.txt.gz"
    path.write_bytes(gzip.compress(TOKENS.encode()))
    captioned = read_captions(path)
    assert [c.image for c in captioned] == list(IMAGES)
    assert captioned[0].captions[2] == "two young children on a skateboard going across a sidewalk"
    assert len(captioned[0].captions) == 3 and captioned[0].line == 1 and captioned[1].line == 3


def test_tsv_and_jsonl_with_named_columns(tmp_path):
    tsv = tmp_path / "caps.tsv"
    tsv.write_text("id\tfile\ttext\n1\ta.jpg\tA dog runs .\n2\tb.jpg\tA cat sleeps .\n\n3\ta.jpg\tThe dog is brown .\n")
    assert read_captions(tsv, image_column="file", caption_column="text") == [
        CaptionedImage("a.jpg", ("A dog runs .", "The dog is brown ."), 2),
        CaptionedImage("b.jpg", ("A cat sleeps .",), 3),
    ]
    jsonl = tmp_path / "caps.jsonl"
    rows = [{"image": "a.jpg", "caption": ["A dog runs .", "The dog is brown ."]}, {"image": "b.jpg", "caption": "A cat sleeps ."}]
    jsonl.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert read_captions(jsonl) == [
        CaptionedImage("a.jpg", ("A dog runs .", "The dog is brown ."), 1),
        CaptionedImage("b.jpg", ("A cat sleeps .",), 2),
    ]


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("c.txt", "a.jpg#0\tok\na.jpg\tno number\n", r"c\.txt, line 2: expected IMAGE_ID#K<TAB>caption"),
        ("c.txt", "a.jpg#0 no tab\n", r"c\.txt, line 1: expected IMAGE<TAB>caption or IMAGE_ID#K<TAB>caption"),
        ("c.txt", "a.jpg\tok\nb.jpg#0\tnumbered\n", r"c\.txt, line 2: expected IMAGE<TAB>caption as on the first line"),
        ("c.txt", "a.jpg#0\tok\na.jpg#1\t  \n", r"c\.txt, line 2: empty caption"),
        ("c.txt", "a.jpg#0\tok\nb.jpg#0\tok\na.jpg#0\tagain\n", r"c\.txt, line 3: caption #0 of 'a\.jpg' repeats line 1"),
        ("c.txt", "", r"c\.txt: empty caption file"),
        ("c.txt", "\n\n", r"c\.txt: empty caption file"),
        ("c.tsv", "image\tcaption\n", r"c\.tsv: empty caption file"),
        ("c.tsv", "img\tcaption\na.jpg\tok\n", r"c\.tsv, line 1: no column 'image' in the header \(img, caption\)"),
        ("c.tsv", "image\tcaption\na.jpg\tok\textra\n", r"c\.tsv, line 2: 3 fields, the header has 2"),
        ("c.jsonl", '{"image": "a.jpg", "caption": "ok"}\n{"image": "b.jpg"\n', r"c\.jsonl, line 2: invalid JSON"),
        ("c.jsonl", '{"image": "a.jpg", "caption": []}\n', r"c\.jsonl, line 1: 'caption' must be a string or a non-empty list"),
        ("c.jsonl", '{"image": "a.jpg", "text": "ok"}\n', r"c\.jsonl, line 1: no field 'caption'"),
        ("c.csv", "image,caption\n", r"c\.csv: unknown caption format"),
    ],
)
def test_malformed_files_name_file_and_line(tmp_path, name, content, message):
    path = tmp_path / name
    path.write_text(content)
    with pytest.raises(DataError, match=message):
        read_captions(path)


def test_invalid_utf8_and_missing_file(tmp_path):
    path = tmp_path / "c.txt"
    path.write_bytes(b"a.jpg#0\tok\na.jpg#1\tcaf\xe9\n")
    with pytest.raises(DataError, match=r"c\.txt, line 2: invalid UTF-8 \(byte 0xe9 at column"):
        read_captions(path)
    with pytest.raises(DataError, match=r"gone\.txt: no such file"):
        read_captions(tmp_path / "gone.txt")


def test_captions_match_a_zip(tmp_path, image_zip):
    captions = tmp_path / "captions.txt"
    captions.write_text(TOKENS)
    captioned, source = read_captioned_images(captions, image_zip)
    assert [c.image for c in captioned] == list(IMAGES)
    assert source.load([captioned[0].image]).shape == (1, 3, 224, 224)


def test_caption_for_a_missing_image_names_the_line(tmp_path, image_zip):
    captions = tmp_path / "captions.txt"
    captions.write_text(TOKENS + "1000268201_693b08cb0e.jpg#0\tA child in a pink dress .\n")
    with pytest.raises(DataError, match=r"captions\.txt, line 5: image '1000268201_693b08cb0e\.jpg' is not in .*images\.zip \(it has e\.g\."):
        read_captioned_images(captions, image_zip)


def test_image_without_caption_names_the_zip_or_folder(tmp_path, image_zip):
    captions = tmp_path / "captions.txt"
    captions.write_text("".join(line + "\n" for line in TOKENS.splitlines() if not line.startswith("3393035454")))
    with pytest.raises(DataError, match=r"images\.zip: image '3393035454_2d2370ffd4\.jpg' has no caption in .*captions\.txt"):
        read_captioned_images(captions, image_zip)
    folder = tmp_path / "folder"
    folder.mkdir()
    for name in IMAGES:
        (folder / name).write_bytes(_jpeg())
    with pytest.raises(DataError, match=r"folder: image '3393035454_2d2370ffd4\.jpg' has no caption"):
        check_images(read_captions(captions), captions, ImageSource(folder))


def test_plain_image_tab_caption_lines(tmp_path):
    path = tmp_path / "c.txt"
    path.write_text("a.jpg\tA dog runs .\nb.jpg\tA cat sleeps .\na.jpg\tThe dog is brown .\n")
    assert read_captions(path) == [CaptionedImage("a.jpg", ("A dog runs .", "The dog is brown ."), 1), CaptionedImage("b.jpg", ("A cat sleeps .",), 2)]


def test_karpathy_split_file_by_split_with_filepath(tmp_path):
    def entry(name, split, *raws, filepath=None):
        return {"filename": name, "split": split, "sentences": [{"raw": r, "tokens": r.split()} for r in raws], **({"filepath": filepath} if filepath else {})}

    images = [entry("a.jpg", "train", "A dog ."), entry("b.jpg", "val", "A cat .", "Two cats ."), entry("c.jpg", "restval", "A bird .", filepath="val2014"),
              entry("d.jpg", "test", "A fish .")]  # fmt: skip
    path = tmp_path / "dataset_coco.json"
    path.write_text(json.dumps({"dataset": "coco", "images": images}))
    assert read_captions(path, split="train") == [CaptionedImage("a.jpg", ("A dog .",), 1, "image"), CaptionedImage("val2014/c.jpg", ("A bird .",), 3, "image")]
    assert read_captions(path, split="valid") == [CaptionedImage("b.jpg", ("A cat .", "Two cats ."), 2, "image")]
    assert [c.image for c in read_captions(path, split="test")] == ["d.jpg"]
    images[1]["sentences"][1]["raw"] = " "
    path.write_text(json.dumps({"images": images}))
    with pytest.raises(DataError, match=r"dataset_coco\.json, image 2 \(b\.jpg\): every sentence needs a non-empty 'raw' caption"):
        read_captions(path, split="valid")
