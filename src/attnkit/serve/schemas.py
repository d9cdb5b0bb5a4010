"""The bodies of the JSON API that every family shares (`/v1/models`, errors); each family's own
requests and responses are in its `api` module."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class BatchingInfo(BaseModel):
    window_ms: float
    max_batch: int
    workers: int
    calls: int
    texts: int
    largest: int


class ModelInfo(BaseModel):
    """A served model; the fields its family adds (`Family.info`: decoding settings, what decodes) follow."""

    model_config = ConfigDict(extra="allow")

    name: str
    task: str
    kind: str
    run: str
    checkpoint: str
    batching: BatchingInfo


class Error(BaseModel):
    detail: str
