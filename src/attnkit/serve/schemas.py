"""Request and response bodies of the JSON API (`/v1/translate`, `/v1/classify`, `/v1/models`)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class Request(BaseModel):
    model_config = ConfigDict(extra="forbid", protected_namespaces=())

    model: str | None = Field(None, description="a loaded model's name (GET /v1/models); default: the first of this task")
    texts: list[str] = Field(description="the inputs, one sentence or document each")
    attention: bool = Field(False, description="also return attention matrices")


class TranslateRequest(Request):
    beam: int | None = Field(None, ge=1, le=16, description="beam size (1 = greedy); default: the run's decode.beam")
    alpha: float | None = Field(None, ge=0.0, le=5.0, description="length penalty; default: the run's decode.alpha")
    nbest: int | None = Field(None, ge=1, le=16, description="hypotheses per text (<= beam); default: the beam size")
    words: bool = Field(False, description="merge subword pieces into words in the attention matrices")


class ClassifyRequest(Request):
    pass


class Hypothesis(BaseModel):
    text: str
    score: float
    finished: bool


class AttentionMap(BaseModel):
    rows: list[str] = Field(description="query tokens")
    cols: list[str] = Field(description="key tokens")
    layers: list[list[list[list[float]]]] = Field(description="weights [layer][head][row][col]")


class Translation(BaseModel):
    """The attention JSONL record of `attnkit translate --attention` plus text, n-best and maps."""

    id: int
    source: str
    text: str
    score: float
    nbest: list[Hypothesis]
    src: list[str] = Field(description="source pieces (+ </s>)")
    tgt: list[str] = Field(description="output pieces (+ </s> if finished)")
    attention: list[list[float]] | None = Field(None, description="last layer's cross-attention, mean over heads [tgt][src]")
    maps: dict[str, AttentionMap] | None = Field(None, description="encoder, decoder_self, cross: every layer and head")


class TranslateResponse(BaseModel):
    model_config = ConfigDict(protected_namespaces=())

    model: str
    results: list[Translation]


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


class BatchingInfo(BaseModel):
    window_ms: float
    max_batch: int
    calls: int
    texts: int
    largest: int


class ModelInfo(BaseModel):
    name: str
    task: str
    kind: str
    run: str
    checkpoint: str
    beam: int | None
    alpha: float | None
    batching: BatchingInfo


class Error(BaseModel):
    detail: str
