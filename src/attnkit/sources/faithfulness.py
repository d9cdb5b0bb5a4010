"""`attnkit faithfulness SOURCE --data FILE --out DIR`: is attention an explanation, over a data set?

For each text of FILE (`data.tables.read_texts`), each output the source explains (`sources.explained`:
a classifier's predicted class, each output token of a translation) is ranked by every method and
scored by the metrics of `attnkit.analysis.faithfulness` (ERASER comprehensiveness and sufficiency
as AOPC, the deletion curve and its area). The methods (`METHODS`):

- `attention`: the output's row of each layer's attention, head mean (`<kind>/layer<l>`; a
  classifier's hops: their mean);
- `rollout`, `flow`: the same row of attention rollout and attention flow (self-attention models);
- `ixg`, `ig`: input x gradient and integrated gradients of the source's score, signed (a token
  that lowers the score ranks last: it is no evidence for the output);
- `loo`: leave-one-out, p(y | x) - p(y | x without the token), removed as the metrics remove it;
- `random`: a seeded random ranking, the floor.

Resumable: `DIR/examples.jsonl` starts with a header (the model's, the data's and the settings'
fingerprints), then one line per text, appended whole as each finishes (`io.append_text`); a run
started again skips the texts it holds, drops a last line a kill cut short, and refuses, in one line,
a file written for another model, data file or settings (`sources.progress`). `--limit` is not a setting: a longer run
continues a shorter one. The summary (`sources.faithfulness_report`) is computed from that file.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import torch

from attnkit.analysis.faithfulness import CURVE, FRACTIONS, faithfulness, leave_one_out, random_scores
from attnkit.errors import AttnkitError
from attnkit.io import append_text
from attnkit.sources.explained import Explained
from attnkit.sources.progress import data_fingerprint, model_fingerprint, read_progress
from attnkit.sources.source import Source

METHODS = ("attention", "rollout", "flow", "ixg", "ig", "loo", "random")
EXAMPLES = "examples.jsonl"
FORMAT = 1  # the header's `attnkit_faithfulness` version
WHAT = "an examples file of attnkit faithfulness"


@dataclass(frozen=True)
class Settings:
    """What changes the figures (the fingerprint's settings part)."""

    methods: tuple[str, ...] = METHODS
    fractions: tuple[float, ...] = FRACTIONS
    curve: tuple[float, ...] = CURVE
    seed: int = 0
    truncate: bool = False
    text_column: str = "text"
    text2_column: str | None = None


def explain(source: Source, text: str, settings: Settings) -> list[Explained]:
    """The outputs of `text` through a source (`sources.source.open_source`) that the metrics explain."""
    return source.explain(text, "flow" in settings.methods, settings.truncate)


def method_scores(e: Explained, methods: Sequence[str], seed: int) -> tuple[dict[str, torch.Tensor], dict]:
    """(method -> token scores (T,), integrated gradients' steps and completeness error) of one output."""
    from attnkit.analysis.attribution import input_x_gradient, integrated_gradients

    scores: dict[str, torch.Tensor] = {}
    figures = {}
    for method in methods:
        if method == "attention":
            scores.update({name: row for name, row in e.attention.items() if name not in ("rollout", "flow")})
        elif method in ("rollout", "flow"):
            if method in e.attention:
                scores[method] = e.attention[method]
        elif method == "ixg":
            scores[method] = input_x_gradient(e.f, e.x).scores[e.positions]  # (T,)
        elif method == "ig":
            a = integrated_gradients(e.f, e.x, check=False)
            scores[method] = a.scores[e.positions]  # (T,)
            figures = {"steps": a.steps, "relative_error": a.relative_error}
        elif method == "loo":
            scores[method] = leave_one_out(e.predict, len(e.tokens), e.p)  # (T,)
        else:  # random
            scores[method] = random_scores(len(e.tokens), seed)  # (T,)
    return {name: s.detach().to("cpu", torch.float64) for name, s in scores.items()}, figures


def output_record(e: Explained, settings: Settings, seed: int) -> dict:
    """One explained output's JSON: its tokens, p, every method's scores and figures."""
    scores, figures = method_scores(e, settings.methods, seed)
    record = {"label": e.label, "p": e.p, "tokens": e.tokens, "scores": {}, "comprehensiveness": {}, "sufficiency": {}, "curve": {}}
    for name, s in scores.items():
        m = faithfulness(e.predict, s, e.p, settings.fractions, settings.curve)
        record["scores"][name] = s.tolist()
        record["comprehensiveness"][name] = m.comprehensiveness
        record["sufficiency"][name] = m.sufficiency
        record["curve"][name] = m.curve
    return {**record, "ig": figures} if figures else record


def example_record(source: Source, index: int, text: str, settings: Settings) -> dict:
    """One text's line of examples.jsonl: each output it explains (the random ranking seeded by index and output)."""
    outputs = [output_record(e, settings, seed=settings.seed + 1_000_003 * index + j) for j, e in enumerate(explain(source, text, settings))]
    return {"index": index, "text": text, "outputs": outputs}


def header(source: Source, data: str | Path, settings: Settings) -> dict:
    return {
        "attnkit_faithfulness": FORMAT,
        "model": model_fingerprint(source.files()),
        "data": data_fingerprint(data),
        "settings": json.loads(json.dumps(asdict(settings))),
    }


def run_faithfulness(loaded: Source, source: str, data: str | Path, out: str | Path, settings: Settings = Settings(), limit: int | None = None,
                     progress: Callable[[int, int], None] | None = None) -> dict:  # fmt: skip
    """Score every text of `data` (the first `limit`) not yet in OUT/examples.jsonl, then write the summary
    (`faithfulness.json`, `.md`, `deletion.png`); returns it. `progress(done, total)` after each text."""
    from attnkit.data.tables import read_texts
    from attnkit.sources.faithfulness_report import write_report

    unknown = sorted(set(settings.methods) - set(METHODS))
    if unknown:
        raise AttnkitError(f"faithfulness: unknown methods {', '.join(unknown)} (known: {', '.join(METHODS)})")
    loaded.check_explained()  # one line, before any text, if the source has nothing the metrics can explain
    texts = read_texts(data, settings.text_column, settings.text2_column)[:limit]
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    path = out / EXAMPLES
    records = {r["index"]: r for r in read_progress(path, header(loaded, data, settings), WHAT)}
    done = sum(1 for i in range(len(texts)) if i in records)
    if progress is not None:
        progress(done, len(texts))
    for i, text in enumerate(texts):
        if i in records:
            continue
        try:
            records[i] = example_record(loaded, i, text, settings)
        except AttnkitError as e:
            raise type(e)(f"{data}, text {i + 1}: {e}") from None
        append_text(path, json.dumps(records[i]) + "\n")
        done += 1
        if progress is not None:
            progress(done, len(texts))
    run = {"source": source, "data": str(data), "examples": len(texts), "settings": asdict(settings)}
    return write_report([records[i] for i in range(len(texts))], run, out)
