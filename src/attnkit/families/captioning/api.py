"""The captioning family's part of `attnkit serve`: the caption page and `POST /v1/caption`.

A request carries the images as base64 strings in `images` and a name for each in `texts` (the
server's batching and limits count `texts`). Each image is at most `MAX_IMAGE_BYTES` decoded; the
body as a whole stays under the server's body limit (`attnkit serve --max-chars`), so the page
downsizes an image in the browser before sending it. Requests batch with requests of the same
settings and images (the key), so a burst of identical requests decodes once.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Hashable
from importlib import resources

from pydantic import BaseModel, ConfigDict, Field

from attnkit.artifacts.runs import LoadedRun
from attnkit.errors import AttnkitError
from attnkit.families.captioning.infer import CaptionResult, caption_images
from attnkit.families.protocol import Api, ApiRequest, Endpoint, OptionalInt, Page, Text, texts_field

STATIC = resources.files("attnkit.families.captioning") / "static"
MAX_IMAGE_BYTES = 4 << 20


class CaptionRequest(ApiRequest):
    texts: list[Text] = texts_field("a name for each image (shown in results and errors)")
    images: list[str] = Field(description="the encoded images (JPEG, PNG, ...), base64, one per name in texts")
    beam: OptionalInt = Field(None, ge=1, le=16, description="beam size (1 = greedy); default: the run's decode.beam")
    nbest: OptionalInt = Field(None, ge=1, le=16, description="captions per image (<= beam); default 1")


class Caption(BaseModel):
    id: int
    name: str
    caption: str
    score: float
    words: list[str] = Field(description="the caption's words (+ </s> if it finished)")
    grid: int = Field(description="attention cells per side")
    attention: list[list[float]] | None = Field(None, description="alpha [word][cell], cells row-major over grid x grid")
    nbest: list[dict]


class CaptionResponse(BaseModel):
    model_config = ConfigDict(protected_namespaces=())

    model: str
    results: list[Caption]


def caption_result(index: int, name: str, result: CaptionResult, attention: bool = True) -> dict:
    """One caption as `POST /v1/caption` answers it (a `Caption`)."""
    return {"id": index, "name": name, "caption": result.caption, "score": result.score, "words": result.words, "grid": result.grid,
            "attention": result.attention if attention else None,
            "nbest": [{"caption": c, "score": s} for c, s in result.nbest]}  # fmt: skip


def decode_images(texts: list[str], images: list[str]) -> tuple[bytes, ...]:
    """The request's images as bytes (one clear error for a missing, malformed or too large one)."""
    if len(images) != len(texts):
        raise AttnkitError(f"images: {len(images)} images for {len(texts)} names in texts")
    out = []
    for i, data in enumerate(images):
        if len(data) > MAX_IMAGE_BYTES * 4 // 3 + 4:
            raise AttnkitError(f"images[{i}] ({texts[i]}): over {MAX_IMAGE_BYTES >> 20} MiB")
        try:
            out.append(base64.b64decode(data.split(",", 1)[-1], validate=True))  # a data: URL's prefix is dropped
        except (binascii.Error, ValueError):
            raise AttnkitError(f"images[{i}] ({texts[i]}): not base64") from None
    return tuple(out)


def batch_key(loaded: LoadedRun, body: CaptionRequest, batch_size: int) -> Hashable:
    decode = loaded.run.decode.with_overrides(beam=body.beam, nbest=body.nbest or 1)
    return decode, body.attention, tuple(body.texts), decode_images(body.texts, body.images)


def answer(loaded: LoadedRun, key: Hashable, texts: list[str], batch_size: int) -> list[dict]:
    """Caption one batch: jobs with one key carry the same images, so text i is image i mod n."""
    decode, attention, names, images = key
    results = caption_images(loaded, list(images), decode, names=list(names), batch_size=batch_size)
    return [caption_result(i, names[i % len(names)], results[i % len(names)], attention) for i in range(len(texts))]


API = Api(
    pages={"/caption": Page("caption", STATIC / "caption.html", scripts=("caption.js",), styles=("caption.css",))},
    assets={
        "caption.js": STATIC / "caption.js",
        "caption.css": STATIC / "caption.css",
        "caption-view.js": STATIC / "caption-view.js",
        "caption-view.css": STATIC / "caption-view.css",
    },
    endpoints=(Endpoint("/v1/caption", CaptionRequest, CaptionResponse, batch_key, answer),),
    renderer="caption-view.js",
    renderer_style="caption-view.css",
)
