"""The parsing family's part of `attnkit serve`: the parse page and `POST /v1/parse`."""

from __future__ import annotations

from collections.abc import Hashable
from importlib import resources

from pydantic import BaseModel, ConfigDict, Field, StrictBool

from attnkit.artifacts.runs import LoadedRun
from attnkit.families.parsing.explore import api_attention, explained, explore
from attnkit.families.protocol import Api, ApiRequest, AttentionMap, Endpoint, OptionalFloat, OptionalInt, Page
from attnkit.viz.records import record_json

STATIC = resources.files("attnkit.families.parsing") / "static"


class ParseRequest(ApiRequest):
    beam: OptionalInt = Field(None, ge=1, le=32, description="beam size (1 = greedy); default: the run's decode.beam")
    alpha: OptionalFloat = Field(None, ge=0.0, le=5.0, description="length penalty; default: the run's decode.alpha")
    raw: StrictBool = Field(False, description="the texts are raw: tokenise them PTB-style first (else split on spaces)")


class SpanChartResult(BaseModel):
    words: list[str]
    best: list[list[float | None]] = Field(description="[i][j]: the best non-empty label's score for words i..j (null for j < i)")
    labels: list[list[str]] = Field(description="[i][j]: that label (a unary chain as S+VP)")
    in_tree: list[list[int]] = Field(description="the parse's labelled spans, [i, j] word ranges")


class Parse(BaseModel):
    id: int
    source: str
    text: str = Field(description="the tree, bracketed on one line")
    tree: str
    svg: str = Field(description="the tree drawn as an inline SVG picture")
    repaired: bool = Field(description="the search was cut at its step limit and linear.repair mended the output")
    score: float
    src: list[str] = Field(description="the words (+ </s>)")
    tgt: list[str] = Field(description="the output symbols (+ </s>)")
    attention: list[list[float]] | None = Field(None, description="last layer's cross-attention, mean over heads [symbol][word]")
    maps: dict[str, AttentionMap] | None = None
    chart: SpanChartResult | None = Field(None, description="chart parsers, with attention: what the parser scored for each span")


class ParseResponse(BaseModel):
    model_config = ConfigDict(protected_namespaces=())

    model: str
    results: list[Parse]


def batch_key(loaded: LoadedRun, body: ParseRequest, batch_size: int) -> Hashable:
    decode = loaded.run.decode.with_overrides(beam=body.beam, alpha=body.alpha, nbest=1, batch_size=batch_size)
    return decode, body.attention, body.raw


def answer(loaded: LoadedRun, key: Hashable, texts: list[str], batch_size: int) -> list[dict]:
    decode, attention, raw = key
    out = [{**record_json(e.index, explained(e)), "attention": api_attention(e)} for e in explore(loaded, texts, decode, maps=attention, raw=raw)]
    if not attention:
        for r in out:
            r["attention"] = None
            r.pop("chart", None)
    return out


API = Api(
    pages={"/parse": Page("parse", STATIC / "parse.html", scripts=("parse.js",))},
    assets={"parse.js": STATIC / "parse.js", "parse-view.js": STATIC / "parse-view.js", "parse-view.css": STATIC / "parse-view.css"},
    endpoints=(Endpoint("/v1/parse", ParseRequest, ParseResponse, batch_key, answer),),
    renderer="parse-view.js",
    renderer_style="parse-view.css",
)
