"""The `/long` page of `attnkit serve`: a long document through a `--hf` decoder, and exact tiles of it on demand.

`POST /v1/long` reads a document as `attnkit attention --long` does (`sources.hf.long.document`:
the memory guard, one forward pass with the model's own kernel, one scan per layer) and keeps its
queries and keys (per layer, at the key/value heads), pooled maps and summary grids in memory,
under an id; it answers the page's record (`sources.hf.long.record`: the coarsest pooled level
embedded, the grids, the tokens). `POST /v1/long/tile` answers a tile of that document: a pooled
level's block means (`level` 64, 256 or 1,024: rows and columns in that level's tiles) or exact
attention (`level` 1: query and key positions), recomputed block by block from the kept queries
and keys (`tiles.exact_tile`), of one head or the mean, with the sink or without it. `GET
/v1/long` says what is kept and how long: every document stays until the documents read after it
fill `--long-cache` (least recently used first; a tile asked of one makes it recent); a tile of an
evicted document is answered 410 in one line, and the page then posts the document again.

The model opens a second time with the long road's attention (`export.open_model`) on its first
document. Documents are read one at a time (the capture is one per process); tiles in parallel.
"""

from __future__ import annotations

import asyncio
import threading
from importlib import resources
from typing import Annotated, Any

from fastapi import FastAPI, HTTPException
from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, StrictBool

from attnkit.errors import AttnkitError
from attnkit.families.protocol import Api, OptionalInt, Page, Text
from attnkit.serve.explorer import detail
from attnkit.sources.hf.load import ARCH_NOUNS, HfModel
from attnkit.sources.hf.long.budget import gib
from attnkit.sources.hf.long.cache import DocumentCache, TooLarge, document_id
from attnkit.sources.hf.long.document import LongDocument, kept_bytes, read_document
from attnkit.sources.hf.long.options import POOLS
from attnkit.sources.hf.long.record import long_record
from attnkit.sources.hf.long.tiles import exact_tile, pooled_tile
from attnkit.viz.report import TEMPLATES

STATIC = resources.files("attnkit.serve") / "static"
LONG = Api(pages={"/long": Page("long inputs", STATIC / "long.html", scripts=("long-view.js", "long-page.js"), styles=("long-view.css",))},
           assets={"long-view.js": TEMPLATES / "long-view.js", "long-view.css": TEMPLATES / "long-view.css", "long-page.js": STATIC / "long-page.js"})  # fmt: skip
MAX_TILE_CELLS = 65_536  # cells of one tile (e.g. 256 x 256): more is 413
MAX_WINDOW = 4096


def _not_a_boolean(value: Any) -> Any:
    if isinstance(value, bool):  # JSON's true and false are no numbers; pydantic would read them as 1 and 0
        raise ValueError("Input should be a number, not true or false")
    return value


Int = Annotated[int, BeforeValidator(_not_a_boolean)]


class LongRequest(BaseModel):
    model_config = ConfigDict(extra="forbid", protected_namespaces=())

    model: str | None = Field(None, description="a Hugging Face decoder's name (GET /v1/sources); default: the first decoder")
    document: Text = Field(description="the document, whole (at most --long-max-chars characters)")
    window: Int = Field(64, ge=1, le=MAX_WINDOW, description="the local window of the `local` summary, in tokens")


class LongResponse(BaseModel):
    model: str
    document: str  # the id that POST /v1/long/tile takes
    tokens: int
    cached: bool  # read before and still in memory: answered without a forward pass
    evicted: list[str]  # documents evicted to make room for this one
    record: dict  # the page's record (docs/explorer.md, "Long inputs")


class TileRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    document: str = Field(description="a document's id (POST /v1/long)", pattern="^[0-9a-f]{16}$")
    layer: Int = Field(ge=1, description="the layer, from 1")
    head: OptionalInt = Field(None, ge=0, description="the head, from 0 (default: the mean over heads)")
    level: Int = Field(1, ge=1, description=f"1: exact attention, rows and columns are token positions; {', '.join(map(str, POOLS))}: that "
                       "pooled level's block means, rows and columns are its tiles")  # fmt: skip
    q0: Int = Field(ge=0, description="the first row (query)")
    q1: Int = Field(ge=1, description="the row after the last")
    k0: Int = Field(ge=0, description="the first column (key)")
    k1: Int = Field(ge=1, description="the column after the last")
    sink: StrictBool = Field(True, description="false: the sink-aware map (rows renormalised without the first token's column)")


class TileResponse(BaseModel):
    document: str
    layer: int
    head: int | None
    level: int
    q0: int
    q1: int
    k0: int
    k1: int
    sink: bool
    values: list[list[float]]  # (q1 - q0, k1 - k0)


class KeptDocument(BaseModel):
    document: str
    model: str
    tokens: int
    bytes: int


class LongCacheInfo(BaseModel):
    models: list[str]  # the served decoders, which read long documents (the page's model picker)
    max_bytes: int  # --long-cache
    used_bytes: int
    keeps: str  # the policy, in words
    documents: list[KeptDocument]  # least recently used first


def keeps(max_bytes: int) -> str:
    """The cache's policy in one sentence (the page, GET /v1/long)."""
    return (f"attnkit serve keeps each document's queries and keys in memory until the documents read after it fill --long-cache "
            f"({gib(max_bytes)} in all): the least recently used goes first, and a tile of an evicted document is read again on demand")  # fmt: skip


class LongDocuments:
    """The served decoders (opened with the long road's attention on first use) and the documents read through them."""

    def __init__(self, sources: dict[str, HfModel], max_bytes: int, max_chars: int) -> None:
        self.sources, self.max_chars = sources, max_chars
        self.cache = DocumentCache(max_bytes)
        self.models: dict[str, HfModel] = {}
        self.reading = threading.Lock()  # one forward pass at a time: the capture is one per process

    def decoders(self) -> list[str]:
        """The names of the served models that read long documents."""
        return [name for name, hf in self.sources.items() if hf.arch == "decoder"]

    def _model(self, name: str) -> HfModel:
        from attnkit.sources.hf.long.export import open_model

        if name not in self.models:
            if self.sources[name].arch != "decoder":
                raise AttnkitError(f"{name}: long documents go through decoder (causal language) models; this one is {ARCH_NOUNS[self.sources[name].arch]}")
            self.models[name] = open_model(self.sources[name].name)
        return self.models[name]

    def read(self, name: str, text: str, window: int) -> tuple[str, LongDocument, bool, list[str]]:
        """(id, document, whether it was kept already, the ids evicted for it)."""
        key = document_id(name, window, text)
        with self.reading:
            doc = self.cache.get(key)
            if doc is not None:
                return key, doc, True, []
            hf = self._model(name)
            n = len(hf.tokenizer(text)["input_ids"])
            self.cache.check(kept_bytes(hf, n), f"document ({n:,} tokens)")
            doc = read_document(hf, text, window)
            return key, doc, False, self.cache.put(key, doc)

    def document(self, key: str) -> LongDocument:
        doc = self.cache.get(key)
        if doc is None:
            if self.cache.was_evicted(key):
                raise HTTPException(410, f"document {key} was evicted from memory (--long-cache {gib(self.cache.max_bytes)}): POST /v1/long with it again")
            raise HTTPException(404, f"unknown document {key}: POST /v1/long with it first")
        return doc


def _check_tile(doc: LongDocument, body: TileRequest) -> None:
    """422 for a tile outside the document (or of a layer, head or level it has not), 413 for one too large."""
    n = len(doc.tokens)
    if body.level != 1 and body.level not in POOLS:
        raise HTTPException(422, f"level: {body.level}; give 1 (exact) or a pooled level, {', '.join(map(str, POOLS))}")
    if body.layer not in doc.kept:
        raise HTTPException(422, f"layer: {body.layer}; the document has layers 1 to {max(doc.kept)}")
    if body.head is not None and body.head >= doc.heads:
        raise HTTPException(422, f"head: {body.head}; the model has heads 0 to {doc.heads - 1}")
    size = -(-n // body.level)
    for name, a, b in (("q", body.q0, body.q1), ("k", body.k0, body.k1)):
        if not a < b <= size:
            raise HTTPException(
                422,
                f"{name}0, {name}1: {a}, {b}; give 0 <= {name}0 < {name}1 <= {size} (the document's {'tokens' if body.level == 1 else f'tiles at level {body.level}'})",
            )
    if (body.q1 - body.q0) * (body.k1 - body.k0) > MAX_TILE_CELLS:
        raise HTTPException(413, f"a tile of {body.q1 - body.q0} x {body.k1 - body.k0} cells, at most {MAX_TILE_CELLS:,}")


def _tile(doc: LongDocument, body: TileRequest) -> list[list[float]]:
    if body.level == 1:
        values = exact_tile(doc.kept[body.layer], body.q0, body.q1, body.k0, body.k1, body.head, body.sink)
    else:
        values = pooled_tile(doc.pooled[body.sink][body.layer][body.level], body.q0, body.q1, body.k0, body.k1, body.head)
    return values.tolist()


def add_long_routes(app: FastAPI, docs: LongDocuments, errors: dict) -> None:
    """`GET /v1/long`, `POST /v1/long` and `POST /v1/long/tile` (module docstring); `errors`: the error answers to document."""

    @app.get("/v1/long", response_model=LongCacheInfo)
    async def kept() -> LongCacheInfo:
        listed = [KeptDocument(document=k, model=d.model, tokens=len(d.tokens), bytes=d.nbytes) for k, d in docs.cache.documents()]
        return LongCacheInfo(
            models=docs.decoders(), max_bytes=docs.cache.max_bytes, used_bytes=docs.cache.used(), keeps=keeps(docs.cache.max_bytes), documents=listed
        )

    @app.post("/v1/long", response_model=LongResponse, responses=errors, description=keeps(docs.cache.max_bytes))
    async def read(body: LongRequest) -> LongResponse:
        decoders = docs.decoders()
        name = body.model or next(iter(decoders), None)
        if name not in docs.sources:
            asked = f"unknown Hugging Face decoder {name!r}" if name else "no Hugging Face decoder is served"
            raise HTTPException(404, f"{asked}; decoders served: {', '.join(decoders) or 'none (serve --hf MODEL)'}")
        if len(body.document) > docs.max_chars:
            raise HTTPException(413, f"document: {len(body.document):,} characters, at most {docs.max_chars:,} (--long-max-chars)")
        if not body.document.strip():
            raise HTTPException(422, "document: empty text")
        try:
            key, doc, cached, evicted = await asyncio.to_thread(docs.read, name, body.document, body.window)
        except AttnkitError as e:
            raise HTTPException(413 if isinstance(e, TooLarge) else 422, detail(e)) from None
        except Exception as e:
            raise HTTPException(500, f"model {name!r} failed: {type(e).__name__}: {e}") from None
        record = long_record(doc, body.document, 0, key)
        return LongResponse(model=name, document=key, tokens=len(doc.tokens), cached=cached, evicted=evicted, record=record)

    gone = {410: {"model": errors[404]["model"], "description": "A document evicted from memory (--long-cache): post it again"}}

    @app.post("/v1/long/tile", response_model=TileResponse, responses={**errors, **gone},
              description=f"A tile of a kept document, at most {MAX_TILE_CELLS:,} cells. {keeps(docs.cache.max_bytes)}.")  # fmt: skip
    async def tile(body: TileRequest) -> TileResponse:
        doc = docs.document(body.document)
        _check_tile(doc, body)
        values = await asyncio.to_thread(_tile, doc, body)
        return TileResponse(**body.model_dump(), values=values)
