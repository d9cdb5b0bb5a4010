"""The translation family's part of `attnkit serve`: the translate page and `POST /v1/translate`."""

from __future__ import annotations

from collections.abc import Hashable
from importlib import resources

from pydantic import BaseModel, ConfigDict, Field, StrictBool

from attnkit.artifacts.runs import LoadedRun
from attnkit.families.protocol import Api, ApiRequest, AttentionMap, Endpoint, OptionalFloat, OptionalInt, Page
from attnkit.families.translation.explore import ExploredTranslation, api_attention, explained, explore, explore_decode
from attnkit.viz.records import record_json

STATIC = resources.files("attnkit.families.translation") / "static"


class TranslateRequest(ApiRequest):
    beam: OptionalInt = Field(None, ge=1, le=16, description="beam size (1 = greedy); default: the run's decode.beam")
    alpha: OptionalFloat = Field(None, ge=0.0, le=5.0, description="length penalty; default: the run's decode.alpha")
    nbest: OptionalInt = Field(None, ge=1, le=16, description="hypotheses per text (<= beam); default: the beam size")
    words: StrictBool = Field(False, description="merge subword pieces into words in the attention matrices")


class HypothesisResult(BaseModel):
    text: str
    score: float
    finished: bool


class TranslationResult(BaseModel):
    """The attention JSONL record of `attnkit translate --attention` plus text, n-best and maps."""

    id: int
    source: str
    text: str
    score: float
    nbest: list[HypothesisResult]
    src: list[str] = Field(description="source pieces (+ </s>)")
    tgt: list[str] = Field(description="output pieces (+ </s> if finished)")
    attention: list[list[float]] | None = Field(None, description="last layer's cross-attention, mean over heads [tgt][src]")
    maps: dict[str, AttentionMap] | None = Field(None, description="encoder, decoder_self, cross: every layer and head")


class TranslateResponse(BaseModel):
    model_config = ConfigDict(protected_namespaces=())

    model: str
    results: list[TranslationResult]


def batch_key(loaded: LoadedRun, body: TranslateRequest, batch_size: int) -> Hashable:
    """Requests with the same settings share a search batch (one per dynamic batch, one worker thread)."""
    decode = explore_decode(loaded.run.decode, body.beam, body.alpha, body.nbest).with_overrides(batch_size=batch_size, workers=1)
    return decode, body.attention, body.words


def result(e: ExploredTranslation) -> dict:
    """One translation as `POST /v1/translate` answers it: its record (`viz.records`) and the search's attention."""
    return {**record_json(e.index, explained(e)), "attention": api_attention(e)}


def answer(loaded: LoadedRun, key: Hashable, texts: list[str], batch_size: int) -> list[dict]:
    decode, attention, words = key
    return [result(e) for e in explore(loaded, texts, decode, maps=attention, words=words)]


API = Api(
    pages={"/": Page("translate", STATIC / "translate.html", scripts=("translate.js",))},
    assets={"translate.js": STATIC / "translate.js"},
    endpoints=(Endpoint("/v1/translate", TranslateRequest, TranslateResponse, batch_key, answer),),
)
