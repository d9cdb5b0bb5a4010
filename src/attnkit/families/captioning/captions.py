"""Caption files for the captioner, checked against the images they describe.

Formats (plain or ``.gz``, UTF-8, by suffix before ``.gz``):

- Flickr8k token file (``.txt``/``.token``; Hodosh et al., 2013): ``IMAGE_ID#K<TAB>caption``, K a
  caption number (0-4 in Flickr8k), no header, e.g. shared/data/flickr8k/captions_dev.txt.gz; or
  the plain ``IMAGE<TAB>caption`` (no ``#K``).
- ``.tsv``: a header row naming the columns, then rows split on tabs (no quoting).
- ``.jsonl``: one object a line; the caption field is a string or a list of strings.
- ``.json``: Karpathy's split file (``dataset_coco.json``, ``dataset_flickr8k.json``): ``images``,
  each with ``filename`` (under ``filepath`` if it has one), ``split`` (``train``, ``restval``,
  ``val``, ``test``) and ``sentences[].raw``; one split of it is read (`KARPATHY_SPLITS`).

Several captions of one image may be on several lines (in any order) or in one JSON list. Every
error is one `DataError` naming the file and line: an empty file, a malformed line, an empty or
repeated caption number, a caption for an image the folder/zip lacks, and (naming the folder/zip)
an image without a caption.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from attnkit.data.text import iter_jsonl, iter_text_lines
from attnkit.errors import DataError
from attnkit.families.captioning.images import ImageSource

_TOKEN_KEY = re.compile(r"^(?P<image>.+?)(#(?P<k>\d+))?$")
KARPATHY_SPLITS = {"train": ("train", "restval"), "valid": ("val",), "test": ("test",)}  # attnkit's split -> Karpathy's


@dataclass(frozen=True)
class CaptionedImage:
    """One image's name (in its folder or zip), its captions in file order, and its first line
    (`unit` ``"image"``: its place in a Karpathy file's ``images``)."""

    image: str
    captions: tuple[str, ...]
    line: int
    unit: str = "line"


def read_captions(path: str | Path, *, image_column: str = "image", caption_column: str = "caption", split: str = "train") -> list[CaptionedImage]:
    """Read a caption file, grouping captions by image (images in order of first appearance).

    Args:
        path: a Flickr8k token file (``.txt``/``.token``), ``.tsv``, ``.jsonl`` or a Karpathy ``.json``, optionally ``.gz``.
        image_column: TSV column / JSON field of the image name.
        caption_column: TSV column / JSON field of the caption(s).
        split: a Karpathy file's split to read (`KARPATHY_SPLITS`: train, valid or test).

    Returns:
        One `CaptionedImage` per image.

    Raises:
        DataError: unreadable file, invalid UTF-8 or JSON, a malformed line, a missing column, an
            empty caption, a repeated ``#K``, or no captions at all.
    """
    path = Path(path)
    kind = path.name.removesuffix(".gz").rsplit(".", 1)[-1].lower()
    if kind in ("txt", "token"):
        records = _token_records(path)
    elif kind == "tsv":
        records = _tsv_records(path, image_column, caption_column)
    elif kind == "jsonl":
        records = _jsonl_records(path, image_column, caption_column)
    elif kind == "json":
        return _karpathy(path, split)
    else:
        raise DataError(f"{path}: unknown caption format (expected .txt/.token, .tsv, .jsonl or a Karpathy .json, optionally .gz)")
    grouped: dict[str, tuple[int, list[str]]] = {}
    for number, image, caption in records:
        grouped.setdefault(image, (number, []))[1].append(caption)
    if not grouped:
        raise DataError(f"{path}: empty caption file (no captions)")
    return [CaptionedImage(image, tuple(captions), line) for image, (line, captions) in grouped.items()]


def check_images(captioned: list[CaptionedImage], captions_path: str | Path, images: ImageSource, *, every_image: bool = True) -> None:
    """Check that every caption's image is there and (`every_image`) every image has a caption.

    Raises:
        DataError: the first caption whose image ``images`` lacks (naming the caption file and
            line), else the first image with no caption (naming the folder or zip).
    """
    names = images.names()
    available = set(names)
    for item in captioned:
        if item.image not in available:
            example = f" (it has e.g. {names[0]!r})" if names else " (it has no images)"
            raise DataError(f"{captions_path}, {item.unit} {item.line}: image {item.image!r} is not in {images.path}{example}")
    if not every_image:
        return
    described = {item.image for item in captioned}
    for name in names:
        if name not in described:
            raise DataError(f"{images.path}: image {name!r} has no caption in {captions_path}")


def read_captioned_images(
    captions_path: str | Path,
    images_path: str | Path,
    *,
    image_column: str = "image",
    caption_column: str = "caption",
    split: str = "train",
    shared: bool = False,
) -> tuple[list[CaptionedImage], ImageSource]:
    """`read_captions` + `check_images`: the captions and the folder/zip they describe.

    `shared`: the folder also holds other splits' images (as a Karpathy file's always does), so an
    image without a caption here is no error.
    """
    captioned = read_captions(captions_path, image_column=image_column, caption_column=caption_column, split=split)
    images = ImageSource(images_path)
    karpathy = Path(captions_path).name.removesuffix(".gz").lower().endswith(".json")
    check_images(captioned, captions_path, images, every_image=not (shared or karpathy))
    return captioned, images


def _token_records(path: Path) -> Iterator[tuple[int, str, str]]:
    seen: dict[tuple[str, str], int] = {}
    numbered: bool | None = None  # IMAGE_ID#K keys (Flickr8k) or plain IMAGE names: the first line decides for all
    for number, line in iter_text_lines(path, strip=False):
        if not line.strip():
            continue
        key, tab, caption = line.partition("\t")
        match = _TOKEN_KEY.match(key.strip())
        if not tab or match is None:
            raise DataError(f"{path}, line {number}: expected IMAGE<TAB>caption or IMAGE_ID#K<TAB>caption, got {line[:60]!r}")
        image, k = match.group("image"), match.group("k")
        numbered = k is not None if numbered is None else numbered
        if numbered != (k is not None):
            raise DataError(f"{path}, line {number}: expected {'IMAGE_ID#K' if numbered else 'IMAGE'}<TAB>caption as on the first line, got {line[:60]!r}")
        if k is not None and (image, k) in seen:
            raise DataError(f"{path}, line {number}: caption #{k} of {image!r} repeats line {seen[image, k]}")
        seen[image, k] = number
        yield number, image, _caption(caption, path, number)


def _karpathy(path: Path, split: str) -> list[CaptionedImage]:
    """The images of one split of a Karpathy split file, each with its ``sentences[].raw``."""
    data = _load_json(path)
    images = data.get("images") if isinstance(data, dict) else None
    if not isinstance(images, list):
        raise DataError(f"{path}: expected a Karpathy split file, an object with a list 'images' (dataset_coco.json style)")
    wanted, out = KARPATHY_SPLITS[split], []
    for number, entry in enumerate(images, start=1):
        where = f"{path}, image {number}"
        if not isinstance(entry, dict) or not isinstance(entry.get("filename"), str) or not isinstance(entry.get("sentences"), list):
            raise DataError(f"{where}: expected an object with 'filename', 'split' and 'sentences'")
        if entry.get("split", "train") not in wanted:
            continue
        raws = [sentence.get("raw") if isinstance(sentence, dict) else None for sentence in entry["sentences"]]
        if not raws or not all(isinstance(raw, str) and raw.strip() for raw in raws):
            raise DataError(f"{where} ({entry['filename']}): every sentence needs a non-empty 'raw' caption")
        name = "/".join(part for part in (entry.get("filepath"), entry["filename"]) if part)
        out.append(CaptionedImage(name, tuple(raw.strip() for raw in raws), number, "image"))
    if not out:
        raise DataError(f"{path}: no images with split {' or '.join(repr(s) for s in wanted)}")
    return out


def _load_json(path: Path) -> object:
    """One JSON document; a syntax error names its line."""
    try:
        return json.loads("\n".join(text for _, text in iter_text_lines(path, strip=False)) or "null")
    except json.JSONDecodeError as err:
        raise DataError(f"{path}, line {err.lineno}: invalid JSON ({err.msg} at column {err.colno})") from None


def _tsv_records(path: Path, image_column: str, caption_column: str) -> Iterator[tuple[int, str, str]]:
    lines = iter_text_lines(path, strip=False)
    first = next(lines, None)
    if first is None:
        return
    number, header_line = first
    if not header_line.strip():
        raise DataError(f"{path}, line {number}: expected a header row naming the columns")
    header = [name.strip() for name in header_line.split("\t")]
    for column in (image_column, caption_column):
        if column not in header:
            raise DataError(f"{path}, line {number}: no column {column!r} in the header ({', '.join(header)})")
    image_at, caption_at = header.index(image_column), header.index(caption_column)
    for number, line in lines:
        if not line.strip():
            continue
        fields = line.split("\t")
        if len(fields) != len(header):
            raise DataError(f"{path}, line {number}: {len(fields)} fields, the header has {len(header)}")
        yield number, _image(fields[image_at], path, number), _caption(fields[caption_at], path, number)


def _jsonl_records(path: Path, image_column: str, caption_column: str) -> Iterator[tuple[int, str, str]]:
    for number, row in iter_jsonl(path):
        for column in (image_column, caption_column):
            if column not in row:
                raise DataError(f"{path}, line {number}: no field {column!r}")
        image, value = row[image_column], row[caption_column]
        if not isinstance(image, str):
            raise DataError(f"{path}, line {number}: {image_column!r} must be a string, got {json.dumps(image)}")
        captions = value if isinstance(value, list) else [value]
        if not captions or not all(isinstance(c, str) for c in captions):
            raise DataError(f"{path}, line {number}: {caption_column!r} must be a string or a non-empty list of strings")
        for caption in captions:
            yield number, _image(image, path, number), _caption(caption, path, number)


def _image(value: str, path: Path, number: int) -> str:
    if not value.strip():
        raise DataError(f"{path}, line {number}: empty image name")
    return value.strip()


def _caption(value: str, path: Path, number: int) -> str:
    if not value.strip():
        raise DataError(f"{path}, line {number}: empty caption")
    return value.strip()
