"""`attnkit faithfulness SOURCE --data FILE --out DIR`: is attention an explanation, over a data set?

For each text of FILE (`data.tables.read_texts`), each output the source explains (`sources.scored`:
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
a file written for another model, data file or settings. `--limit` is not a setting: a longer run
continues a shorter one. The summary (`sources.faithfulness_report`) is computed from that file.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import torch

from attnkit.analysis.faithfulness import CURVE, FRACTIONS, faithfulness, leave_one_out, random_scores
from attnkit.errors import AttnkitError, DataError
from attnkit.io import append_text
from attnkit.sources.scored import ScoredOutput
from attnkit.sources.source import Source

METHODS = ("attention", "rollout", "flow", "ixg", "ig", "loo", "random")
EXAMPLES = "examples.jsonl"
FORMAT = 1  # the header's `attnkit_faithfulness` version


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


def scored_outputs(source: Source, text: str, settings: Settings) -> list[ScoredOutput]:
    """The outputs of `text` through a source (`sources.source.open_source`) that the metrics explain."""
    return source.scored_outputs(text, "flow" in settings.methods, settings.truncate)


def method_scores(e: ScoredOutput, methods: Sequence[str], seed: int) -> tuple[dict[str, torch.Tensor], dict]:
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


def output_record(e: ScoredOutput, settings: Settings, seed: int) -> dict:
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
    outputs = [output_record(e, settings, seed=settings.seed + 1_000_003 * index + j) for j, e in enumerate(scored_outputs(source, text, settings))]
    return {"index": index, "text": text, "outputs": outputs}


def _files_digest(files: Sequence[Path]) -> str:
    h = hashlib.sha256()
    for f in sorted(files):
        st = f.stat()
        h.update(f"{f.name}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
    return h.hexdigest()


def model_fingerprint(source: Source) -> str:
    """The files that make the model (a run's run.json and checkpoint, a Hugging Face folder's): names, sizes, times."""
    return _files_digest(source.files())


def data_fingerprint(path: str | Path) -> str:
    """sha256 of the data file's bytes."""
    h = hashlib.sha256()
    try:
        with open(path, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                h.update(block)
    except OSError as e:
        raise DataError(f"{path}: cannot read ({e.strerror or e})") from None
    return h.hexdigest()


def header(source: Source, data: str | Path, settings: Settings) -> dict:
    return {
        "attnkit_faithfulness": FORMAT,
        "model": model_fingerprint(source),
        "data": data_fingerprint(data),
        "settings": json.loads(json.dumps(asdict(settings))),
    }


def read_progress(path: Path, expected: dict) -> dict[int, dict]:
    """The records examples.jsonl holds (index -> record), after checking its header against `expected`.

    A last line without its newline (a kill during the append) is cut off the file.
    """
    if not path.exists():
        append_text(path, json.dumps(expected) + "\n")
        return {}
    data = path.read_bytes()
    end = data.rfind(b"\n") + 1
    if end < len(data):
        os.truncate(path, end)
    lines = data[:end].decode("utf-8").splitlines()
    if not lines:
        append_text(path, json.dumps(expected) + "\n")
        return {}
    try:
        found = json.loads(lines[0])
        records = [json.loads(line) for line in lines[1:]]
    except json.JSONDecodeError as e:
        raise AttnkitError(f"{path}: not an examples file of attnkit faithfulness ({e.msg}); use another --out") from None
    if not isinstance(found, dict) or found.get("attnkit_faithfulness") != FORMAT:
        raise AttnkitError(f"{path}: not an examples file of attnkit faithfulness; use another --out")
    differ = [what for what, key in (("model", "model"), ("data file", "data"), ("settings", "settings")) if found.get(key) != expected[key]]
    if differ:
        raise AttnkitError(f"{path}: written for another {' and '.join(differ)}; cannot resume: use another --out or delete the file")
    return {r["index"]: r for r in records}


def run_faithfulness(loaded: Source, source: str, data: str | Path, out: str | Path, settings: Settings = Settings(), limit: int | None = None,
                     progress: Callable[[int, int], None] | None = None) -> dict:  # fmt: skip
    """Score every text of `data` (the first `limit`) not yet in OUT/examples.jsonl, then write the summary
    (`faithfulness.json`, `.md`, `deletion.png`); returns it. `progress(done, total)` after each text."""
    from attnkit.data.tables import read_texts
    from attnkit.sources.faithfulness_report import write_report

    unknown = sorted(set(settings.methods) - set(METHODS))
    if unknown:
        raise AttnkitError(f"faithfulness: unknown methods {', '.join(unknown)} (known: {', '.join(METHODS)})")
    loaded.check_scored()  # one line, before any text, if the source has nothing the metrics can explain
    texts = read_texts(data, settings.text_column, settings.text2_column)[:limit]
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    path = out / EXAMPLES
    records = read_progress(path, header(loaded, data, settings))
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
