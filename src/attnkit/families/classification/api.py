"""The sentence family's part of `attnkit serve`: the classify page and `POST /v1/classify`."""

from __future__ import annotations

from collections.abc import Hashable
from importlib import resources

from pydantic import BaseModel, ConfigDict, Field

from attnkit.artifacts.runs import LoadedRun
from attnkit.families.classification.infer import ClassifyResult, classify_texts
from attnkit.families.protocol import Api, ApiRequest, Endpoint, Page

STATIC = resources.files("attnkit.families.classification") / "static"


class ClassifyRequest(ApiRequest):
    pass


class Classification(BaseModel):
    id: int
    text: str
    label: str
    probs: dict[str, float]
    tokens: list[str]
    attention: list[list[float]] | None = Field(None, description="weights [hop][token]")


class ClassifyResponse(BaseModel):
    model_config = ConfigDict(protected_namespaces=())

    model: str
    results: list[Classification]


def classification_result(index: int, text: str, result: ClassifyResult, attention: bool = True) -> dict:
    """A `ClassifyResult` as `POST /v1/classify` answers it (a `Classification`; attention: [hop][token])."""
    return {"id": index, "text": text, "label": result.label, "probs": result.probs, "tokens": result.tokens,
            "attention": result.attention if attention else None}  # fmt: skip


def batch_key(loaded: LoadedRun, body: ClassifyRequest, batch_size: int) -> Hashable:
    return body.attention


def answer(loaded: LoadedRun, key: Hashable, texts: list[str], batch_size: int) -> list[dict]:
    results = classify_texts(loaded, texts, batch_size=batch_size)
    return [classification_result(i, text, r, attention=bool(key)) for i, (text, r) in enumerate(zip(texts, results))]


API = Api(
    pages={"/classify": Page("classify", STATIC / "classify.html", scripts=("classify.js",))},
    assets={"classify.js": STATIC / "classify.js", "classify-view.js": STATIC / "classify-view.js", "classify-view.css": STATIC / "classify-view.css"},
    endpoints=(Endpoint("/v1/classify", ClassifyRequest, ClassifyResponse, batch_key, answer),),
    renderer="classify-view.js",
    renderer_style="classify-view.css",
)
