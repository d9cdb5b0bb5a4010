"""The bodies of the JSON API that every family shares (`/v1/models`, errors); each family's own
requests and responses are in its `api` module."""

from __future__ import annotations

from pydantic import BaseModel


class BatchingInfo(BaseModel):
    window_ms: float
    max_batch: int
    workers: int
    calls: int
    texts: int
    largest: int


class ModelInfo(BaseModel):
    name: str
    task: str
    kind: str
    run: str
    checkpoint: str
    beam: int | None = None
    alpha: float | None = None
    engine: str | None = None  # what decodes (attnkit, ctranslate2), for the runs whose family has engines
    batching: BatchingInfo


class Error(BaseModel):
    detail: str
