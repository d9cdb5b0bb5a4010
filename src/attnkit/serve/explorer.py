"""The `/attention` page of `attnkit serve`: every served source's attention in the explorer's views.

Sources are the served runs and the Hugging Face models of `--hf` (a folder or a hub id). The page
(`static/attention.html` in the one template, `serve/pages.py`) posts one text to
`POST /v1/attention` and draws the answer's record with the shared card and views, the record that
`attnkit report` embeds (`attnkit.sources.page`). `GET /v1/sources` lists the sources. For a run,
the page also draws its training curves (`GET /v1/models/{name}/metrics`, `serve/curves.py`). Each
source answers one request at a time (a lock each), in a worker thread; a text over `--max-chars`
is refused (413), and so is a page over `--max-cells` weights (422, one line).
"""

from __future__ import annotations

import asyncio
import threading
from importlib import resources
from typing import Literal

from fastapi import FastAPI, HTTPException
from pydantic import BaseModel, ConfigDict, Field, StrictBool

from attnkit.errors import AttnkitError, TooManyTokens
from attnkit.families.protocol import Api, OptionalInt, Page, Text
from attnkit.sources.options import AttentionOptions
from attnkit.sources.page import page_record
from attnkit.sources.source import Source
from attnkit.viz.report import TEMPLATES

STATIC = resources.files("attnkit.serve") / "static"
EXPLORER = Api(pages={"/attention": Page("attention", STATIC / "attention.html", scripts=("curves.js", "attention-page.js"))},
               assets={"attention-page.js": STATIC / "attention-page.js", "curves.js": TEMPLATES / "curves.js"})  # fmt: skip


class AttentionRequest(BaseModel):
    model_config = ConfigDict(extra="forbid", protected_namespaces=())

    model: str | None = Field(None, description="a source's name (GET /v1/sources); default: the first")
    text: Text = Field(description="the input text")
    target: str | None = Field(None, description="encoder-decoder models: the target to attend over (default: the model's own output)")
    words: StrictBool = Field(False, description="merge subword pieces into words")
    flow: StrictBool | Literal["explained", "all"] = Field(
        False, description='attention flow: true or "explained", the explained output\'s row; "all", every row (slow)'
    )
    attribute: list[Literal["ixg", "ig"]] = Field([], description="attributions of one output and their Kendall tau with attention (translation runs too)")
    output: OptionalInt = Field(None, ge=0, description="with attribute: a class, a next-token id or a target position (default: the model's own)")


class AttentionResponse(BaseModel):
    model: str
    record: dict


def detail(e: AttnkitError) -> str:
    """An error's answer: its line, less the command-line options a request cannot give (`TooManyTokens.served`)."""
    return e.served if isinstance(e, TooManyTokens) else str(e)


class SourceInfo(BaseModel):
    name: str
    type: str  # "run" or "hf": the source's origin (`Source.origin`)


def add_routes(app: FastAPI, sources: dict[str, Source], max_chars: int, max_cells: int, errors: dict) -> None:
    """`GET /v1/sources` and `POST /v1/attention` over `sources` (name -> a run or a Hugging Face model, `sources.source`);
    `errors`: the error answers to document (status -> OpenAPI response)."""
    locks = {name: threading.Lock() for name in sources}

    @app.get("/v1/sources", response_model=list[SourceInfo])
    async def list_sources() -> list[SourceInfo]:
        return [SourceInfo(name=name, type=s.origin) for name, s in sources.items()]

    @app.post("/v1/attention", response_model=AttentionResponse, responses=errors)
    async def attention(body: AttentionRequest) -> AttentionResponse:
        name = body.model or next(iter(sources), None)
        if name not in sources:
            raise HTTPException(404, f"unknown model {name!r}; loaded: {', '.join(sources)}")
        for field, text in (("text", body.text), ("target", body.target or "")):
            if len(text) > max_chars:
                raise HTTPException(413, f"{field}: {len(text)} characters, at most {max_chars}")
        if not body.text.strip():
            raise HTTPException(422, "text: empty text")
        options = AttentionOptions(target=body.target, words=body.words, flow=body.flow, attribute=tuple(body.attribute), output=body.output)

        def run() -> dict:
            with locks[name]:
                return page_record(sources[name], body.text, options, max_cells)

        try:
            record = await asyncio.to_thread(run)
        except AttnkitError as e:
            raise HTTPException(422, detail(e)) from None
        except Exception as e:
            raise HTTPException(500, f"model {name!r} failed: {type(e).__name__}: {e}") from None
        return AttentionResponse(model=name, record=record)
