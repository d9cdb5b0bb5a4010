"""`GET /v1/models/{name}/metrics`: a served run's training curves as JSON (`attnkit.viz.curves`).

The explorer page (`static/attention-page.js`) draws them for the picked run with
`viz/templates/curves.js`, the script the report inlines. The run's metrics.jsonl is read on every
request, so a run still training shows its newest values. A run with no metrics yet answers 200 with
`curves: null` and a `note` (a normal state, which browsers would log as an error if it were a 404);
404: no such run; 422: a line of metrics.jsonl that is not a record (the one-line error naming the
file and line).
"""

from __future__ import annotations

from fastapi import FastAPI, HTTPException
from pydantic import BaseModel

from attnkit.artifacts.runs import LoadedRun
from attnkit.errors import AttnkitError
from attnkit.viz.curves import METRICS_FILE, run_curves


class CurvesResponse(BaseModel):
    model: str
    curves: dict | None  # `Curves.to_json()`: name, path, panels of lines (label, step, minutes, value); None: no metrics yet
    note: str | None = None  # why there are no curves


def add_curves_route(app: FastAPI, runs: dict[str, LoadedRun], errors: dict) -> None:
    """`GET /v1/models/{name}/metrics` over the served `runs` (name -> loaded run); `errors`: the error answers to
    document (status -> OpenAPI response)."""

    @app.get("/v1/models/{name}/metrics", response_model=CurvesResponse, responses={code: errors[code] for code in (404, 422)})
    def metrics(name: str) -> CurvesResponse:
        if name not in runs:
            raise HTTPException(404, f"unknown run {name!r}; runs: {', '.join(runs) or 'none'}")
        loaded = runs[name]
        try:
            curves = run_curves(loaded.folder, loaded.family.run_schema.METRICS, missing_ok=True)
        except AttnkitError as e:
            raise HTTPException(422, str(e)) from None
        if curves is None:
            return CurvesResponse(model=name, curves=None, note=f"{loaded.folder / METRICS_FILE}: no metrics yet")
        return CurvesResponse(model=name, curves=curves.to_json())
