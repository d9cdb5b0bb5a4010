"""`attnkit serve`: a local web UI and JSON API over one or more loaded runs (FastAPI + uvicorn).

Routes: each family's pages (one template around the family's view, `serve/pages.py`) and `POST`
endpoints (`attnkit.families.protocol.Api`), the `/attention` page over every run and Hugging Face
model (`GET /v1/sources`, `POST /v1/attention`: `serve/explorer.py`), the `/long` page over the Hugging Face
decoders (`GET`/`POST /v1/long`, `POST /v1/long/tile`: documents kept in memory within `--long-cache`,
exact tiles from their queries and keys: `serve/long.py`), a run's training curves
(`GET /v1/models/{name}/metrics`: `serve/curves.py`), `/static/*` (plain-JS and CSS assets),
`GET /v1/models`, `GET /healthz`, `/openapi.json`.
Every model runs on its own `DynamicBatcher` threads (`Batching.workers`, `--workers`), and
decodes with attnkit's search or the engine `--engine` names (`Family.engines`). Bad requests answer one clear `detail` line:
413 for too many or too long texts (or a body too large for them, with or without a Content-Length:
`serve/body_limit.py`), 422 for an empty or malformed body, 404 for an unknown model, 500 for a
model error (the server keeps serving). /openapi.json documents each of them with that body (`ERRORS`)
and states in the request schemas what the server checks, the served limits included
(`_schema_with_limits`); tests/serve/test_schema_fuzz.py fuzzes the API from it.
"""

from __future__ import annotations

import asyncio
import logging
import socket
from collections.abc import Hashable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import torch
from fastapi import FastAPI, HTTPException, Request
from fastapi.exception_handlers import http_exception_handler
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, JSONResponse, Response
from starlette.exceptions import HTTPException as StarletteHTTPException

from attnkit.artifacts.runs import LoadedRun
from attnkit.errors import AttnkitError
from attnkit.families import FAMILIES, run_family
from attnkit.families.protocol import ATTNKIT, Endpoint, load_engine_run
from attnkit.serve import schemas
from attnkit.serve.batcher import DynamicBatcher
from attnkit.serve.body_limit import BodyLimit
from attnkit.serve.curves import add_curves_route
from attnkit.serve.explorer import EXPLORER, add_routes
from attnkit.serve.long import LONG, LongDocuments, add_long_routes
from attnkit.serve.pages import navigation, render_page
from attnkit.sources.page import MAX_CELLS
from attnkit.sources.source import HfSource, RunSource
from attnkit.viz.report import template

log = logging.getLogger("attnkit")
STATIC = resources.files("attnkit.serve") / "static"
SHARED_ASSETS = {"attention.js": template("attention.js"), "attention-views.js": template("attention-views.js"), "attention.css": template("attention.css"),
                 "page.js": (STATIC / "page.js").read_text(encoding="utf-8")}  # fmt: skip
MEDIA = {".js": "text/javascript", ".css": "text/css"}
ERRORS = {code: {"model": schemas.Error, "description": why} for code, why in [
    (404, "Unknown model or run"), (413, "Too many or too long texts, or a body too large for them"),
    (422, "A body that is not JSON, or does not fit the schema, or that the model refuses"), (500, "The model failed (the server keeps serving)")]}  # fmt: skip


@dataclass(frozen=True)
class Limits:
    max_texts: int = 64
    max_chars: int = 1000
    max_cells: int = MAX_CELLS  # attention weights of one /attention page
    long_chars: int = 500_000  # characters of one document on the /long page
    long_cache: int = 2 * 2**30  # bytes of the documents the /long page keeps in memory (`serve.long`)

    @property
    def max_body(self) -> int:
        """Bytes a request body may have: the most texts at their longest (6 bytes a character, a
        JSON \\uXXXX escape) and room for the other fields; larger bodies are refused before parsing."""
        return self.max_texts * (6 * self.max_chars + 8) + 4096

    @property
    def bodies(self) -> dict[str, int]:
        """The routes whose bodies may be larger: a long document's (6 bytes a character)."""
        return {"/v1/long": 6 * self.long_chars + 4096}


@dataclass(frozen=True)
class Batching:
    """The batch policy of every served model (docs/explorer.md, dynamic batching)."""

    window_ms: float = 5.0  # how long a batch waits for more requests after its first
    max_batch: int = 32  # texts per model call (1: no batching)
    workers: int = 1  # batches decoded at once, each by its own thread (`DynamicBatcher`)


class ServedModel:
    """A loaded run and the batcher thread that owns it."""

    def __init__(self, name: str, loaded: LoadedRun, batching: Batching) -> None:
        self.name, self.loaded, self.batching = name, loaded, batching
        self.family = loaded.family
        self.batcher = DynamicBatcher(self._run, batching.window_ms / 1000, batching.max_batch, name, batching.workers)

    def _run(self, key: Hashable, texts: list[str]) -> list[dict]:
        endpoint, inner = key
        return endpoint.run(self.loaded, inner, texts, self.batching.max_batch)

    def info(self) -> schemas.ModelInfo:
        stats = self.batcher.stats
        return schemas.ModelInfo(
            name=self.name, task=self.family.name, kind=self.loaded.run.model.kind, run=str(self.loaded.folder),
            checkpoint=self.loaded.checkpoint.name, **self.family.info(self.loaded),
            batching=schemas.BatchingInfo(window_ms=self.batching.window_ms, max_batch=self.batching.max_batch, workers=self.batching.workers,
                                          calls=stats.calls, texts=stats.texts, largest=stats.largest),
        )  # fmt: skip


def _pick(models: dict[str, ServedModel], name: str | None, endpoint: Endpoint, family) -> ServedModel:
    """The named model (or the first of `family`), refused unless `endpoint` is its family's."""
    task = family.name
    if name is None:
        for model in models.values():
            if model.family is family:
                return model
        raise HTTPException(404, f"no {task} model loaded (loaded: {', '.join(models)})")
    if name not in models:
        raise HTTPException(404, f"unknown model {name!r}; loaded: {', '.join(models)}")
    if models[name].family is not family:
        other = ", ".join(e.path for e in models[name].family.api.endpoints)
        raise HTTPException(422, f"model {name!r} is a {models[name].family.name} model; use {other}")
    return models[name]


def _check_texts(texts: list[str], limits: Limits) -> None:
    if not texts:
        raise HTTPException(422, "texts: give at least one text")
    if len(texts) > limits.max_texts:
        raise HTTPException(413, f"texts: {len(texts)} texts, at most {limits.max_texts} per request")
    for i, text in enumerate(texts):
        if not text.strip():
            raise HTTPException(422, f"texts[{i}]: empty text")
        if len(text) > limits.max_chars:
            raise HTTPException(413, f"texts[{i}]: {len(text)} characters, at most {limits.max_chars} per text")


async def _call(model: ServedModel, key: Hashable, texts: list[str]) -> list[dict]:
    try:
        results = await asyncio.wrap_future(model.batcher.submit(key, texts))
    except AttnkitError as e:
        raise HTTPException(422, str(e)) from None
    except Exception as e:
        raise HTTPException(500, f"model {model.name!r} failed: {type(e).__name__}: {e}") from None
    return [dict(r, id=i) for i, r in enumerate(results)]


def _validation_message(exc: RequestValidationError) -> str:
    """One line for a malformed or invalid body, e.g. `body.beam: Input should be ... (got 0)`."""
    parts = []
    for err in exc.errors():
        if err["type"] == "json_invalid":
            return f"malformed JSON body: {err.get('ctx', {}).get('error', err['msg'])}"
        where = ".".join(str(p) for p in err["loc"])
        parts.append(f"{where}: {err['msg']}" + (f" (got {err['input']!r})" if err["type"] != "missing" and "input" in err else ""))
    return "; ".join(parts)[:500]


def create_app(models: dict[str, LoadedRun], limits: Limits = Limits(), batching: Batching = Batching(), hf: dict | None = None) -> FastAPI:
    """The app serving `models` by name (one batcher thread each), with every family's pages and routes,
    and the attention page over them and the Hugging Face models `hf` (name -> `HfSource`, `load_hf`)."""
    served = {name: ServedModel(name, loaded, batching) for name, loaded in models.items()}

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        yield
        for model in served.values():
            model.batcher.close()

    app = FastAPI(title="attnkit", summary="Run trained attention models and look at their attention", docs_url=None, redoc_url=None, lifespan=lifespan)
    app.state.models = served
    assets = dict(SHARED_ASSETS)
    apis = [*(family.api for family in FAMILIES.values()), EXPLORER, LONG]
    nav = navigation(apis)
    for api in (EXPLORER, LONG):
        assets.update({name: path.read_text(encoding="utf-8") for name, path in api.assets.items()})
        for path, page in api.pages.items():
            _add_page(app, path, render_page(page, api, nav))
    add_routes(app, {**{name: RunSource(loaded) for name, loaded in models.items()}, **(hf or {})}, limits.max_chars, limits.max_cells, ERRORS)
    add_long_routes(app, LongDocuments({name: s.hf for name, s in (hf or {}).items()}, limits.long_cache, limits.long_chars), ERRORS)
    add_curves_route(app, models, ERRORS)
    for family in FAMILIES.values():
        assets.update({name: path.read_text(encoding="utf-8") for name, path in family.api.assets.items()})
        for path, page in family.api.pages.items():
            _add_page(app, path, render_page(page, family.api, nav))
        for endpoint in family.api.endpoints:
            _add_endpoint(app, served, endpoint, family, limits, batching)

    _add_shared_routes(app, served, assets, limits)
    return app


def _add_shared_routes(app: FastAPI, served: dict[str, ServedModel], assets: dict[str, str], limits: Limits) -> None:
    """The body cap, the one-line validation errors, /static, /healthz and /v1/models."""

    app.add_middleware(BodyLimit, max_body=limits.max_body, paths=limits.bodies)

    @app.exception_handler(RequestValidationError)
    async def invalid_body(request: Request, exc: RequestValidationError) -> JSONResponse:
        return JSONResponse({"detail": _validation_message(exc)}, status_code=422)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> Response:
        if exc.status_code == 400 and isinstance(exc.__cause__, UnicodeDecodeError):  # FastAPI's 400 for a body that is not UTF-8
            return JSONResponse({"detail": f"malformed JSON body: not UTF-8 (byte {exc.__cause__.start})"}, status_code=422)
        return await http_exception_handler(request, exc)

    app.openapi = _schema_with_limits(app, limits)

    @app.get("/static/{name}", include_in_schema=False)
    async def static(name: str) -> Response:
        if name not in assets:
            raise HTTPException(404, f"no such file: /static/{name}")
        return Response(assets[name], media_type=MEDIA[Path(name).suffix])

    @app.get("/healthz")
    async def healthz() -> dict:
        return {"status": "ok", "models": len(served)}

    @app.get("/v1/models", response_model=list[schemas.ModelInfo])
    async def list_models() -> list[schemas.ModelInfo]:
        return [model.info() for model in served.values()]


def _schema_with_limits(app: FastAPI, limits: Limits):
    """`app.openapi` with the served limits in each request body: at most `max_texts` texts and `max_chars`
    characters a text (`texts`, the attention page's `text` and `target`), and `long_chars` a long document,
    which the server answers 413."""
    openapi = app.openapi

    def schema() -> dict:
        if app.openapi_schema is None:
            components = openapi()["components"]["schemas"]
            for path in app.openapi_schema["paths"].values():
                ref = path.get("post", {}).get("requestBody", {}).get("content", {}).get("application/json", {}).get("schema", {}).get("$ref")
                for name, field in components[ref.rsplit("/", 1)[-1]]["properties"].items() if ref else ():
                    if name == "texts":
                        field.update(maxItems=limits.max_texts)
                        field["items"].update(maxLength=limits.max_chars)
                    for string in [field, *field.get("anyOf", [])] if name in ("text", "target") else ():
                        if string.get("type") == "string":
                            string.update(maxLength=limits.max_chars)
                    if name == "document" and ref.endswith("/LongRequest"):
                        field.update(maxLength=limits.long_chars)
        return app.openapi_schema

    return schema


def _add_page(app: FastAPI, path: str, html: str) -> None:
    async def page() -> HTMLResponse:
        return HTMLResponse(html)

    app.get(path, response_class=HTMLResponse, include_in_schema=False)(page)


def _add_endpoint(app: FastAPI, served: dict[str, ServedModel], endpoint: Endpoint, family, limits: Limits, batching: Batching) -> None:
    """`POST endpoint.path`: pick the model, check the texts, batch them with like requests."""

    async def handle(body) -> dict:
        model = _pick(served, body.model, endpoint, family)
        _check_texts(body.texts, limits)
        try:
            key = endpoint.key(model.loaded, body, batching.max_batch)
        except AttnkitError as e:
            raise HTTPException(422, str(e)) from None
        return {"model": model.name, "results": await _call(model, (endpoint, key), body.texts)}

    handle.__annotations__ = {"body": endpoint.request, "return": dict}  # FastAPI reads the body type from here
    app.post(endpoint.path, response_model=endpoint.response, responses=ERRORS, name=endpoint.path.rsplit("/", 1)[-1])(handle)


def load_models(runs: Sequence[str], checkpoint: str = "best", dtype: str = "fp32", engine: str = ATTNKIT) -> dict[str, LoadedRun]:
    """Load each run under its folder name (two runs with one name are an error), decoding with `engine` in `dtype`."""
    models: dict[str, LoadedRun] = {}
    for run in runs:
        name = Path(run).resolve().name
        if name in models:
            raise AttnkitError(f"{run}: two runs named {name!r}; serve copies under different folder names")
        models[name] = load_engine_run(run, run_family(run), checkpoint, dtype, engine)
    return models


def load_hf(sources: Sequence[str], taken: Sequence[str] = ()) -> dict[str, HfSource]:
    """Load each Hugging Face model (`--hf`) under the name it was given (a folder: its name)."""
    from attnkit.sources.hf.load import load

    models: dict[str, HfSource] = {}
    for source in sources:
        name = Path(source).resolve().name if Path(source).is_dir() else source
        if name in models or name in taken:
            raise AttnkitError(f"{source}: two models named {name!r}")
        models[name] = HfSource(load(source))
    return models


def serve(runs: Sequence[str], host: str = "127.0.0.1", port: int = 8000, limits: Limits = Limits(), batching: Batching = Batching(),
          checkpoint: str = "best", dtype: str = "fp32", hf: Sequence[str] = (), engine: str = ATTNKIT) -> None:  # fmt: skip
    """Load `runs` (and the Hugging Face models `hf`) and serve them until interrupted. With `batching.workers` N,
    each of the N decoding threads gets max(1, threads // N) intra-op threads."""
    import uvicorn

    with socket.socket() as probe:  # a busy port is one clear line, before the models load
        try:
            probe.bind((host, port))
        except OSError as e:
            raise AttnkitError(f"cannot listen on {host}:{port}: {e.strerror or e}") from None
    if not runs and not hf:
        raise AttnkitError("serve: give run folders, --hf models, or both")
    torch.set_num_threads(max(1, torch.get_num_threads() // batching.workers))  # before the models (an engine reads it)
    models = load_models(runs, checkpoint, dtype, engine)
    app = create_app(models, limits, batching, load_hf(hf, list(models)))
    log.info("serving %s on http://%s:%d/", ", ".join([*models, *hf]), host, port)
    uvicorn.run(app, host=host, port=port, log_level="warning")
