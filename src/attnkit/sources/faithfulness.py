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
- `loo`: leave-one-out, p(y | x) - p(y | x without the token), removed as the metrics remove it
  (`--removal`: delete, mask or pad; `sources.scored` says what each means for a run and a Hugging Face model);
- `random`: a seeded random ranking, the floor.

Resumable: `DIR/examples.jsonl` starts with a header (the model's, the data's and the settings'
fingerprints), then one line per text, appended whole as each finishes (`io.append_text`); a run
started again skips the texts it holds, drops a last line a kill cut short, and refuses, in one line,
a file written for another model, data file or settings (`sources.progress`). `--limit` is not a setting: a longer run
continues a shorter one. The summary (`sources.faithfulness_report`) is computed from that file.

Under torchrun (`torchrun --nproc-per-node N -m attnkit faithfulness ...`, any number of nodes), rank r
scores the texts r, r + N, r + 2N, ... into its own `examples.rank<r>-of-<N>.jsonl` (resumable as above,
on its own), and rank 0 gathers them (gloo) into examples.jsonl, in text order, and the summary. Each text's
figures depend on the text alone (its removals are batched within the text), so the lines are the ones a
single process writes.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import torch

from attnkit.analysis.faithfulness import CURVE, FRACTIONS, faithfulness_of_rankings, leave_one_out, random_scores
from attnkit.errors import AttnkitError
from attnkit.io import append_text
from attnkit.sources.progress import Shard, data_fingerprint, model_fingerprint, read_progress, records_elsewhere
from attnkit.sources.scored import ScoredOutput
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
    removal: str | None = None  # None: the source's default (`sources.source`); not in the header then, as before it was a setting


def scored_outputs(source: Source, text: str, settings: Settings) -> list[ScoredOutput]:
    """The outputs of `text` through a source (`sources.source.open_source`) that the metrics explain."""
    return source.scored_outputs(text, "flow" in settings.methods, settings.truncate, settings.removal)


def gradients(outputs: Sequence[ScoredOutput], baseline: torch.Tensor | None = None, steps: int | None = None) -> list[tuple]:
    """(input x gradient, integrated gradients) of each output's score at its input, from `baseline` (zeros) at `steps`
    (None: as `input_x_gradient_and_integrated_gradients` chooses): the outputs whose scores are columns of one score
    of the same input (`analysis.attribution.OutputOf`: a translation's output tokens) in one batched forward and
    backward pass (`attributions_of_outputs`), any other output in a pass of its own."""
    from attnkit.analysis.attribution import OutputOf, attributions_of_outputs, input_x_gradient_and_integrated_gradients

    groups: dict[object, list[int]] = {}
    for i, e in enumerate(outputs):
        groups.setdefault((id(e.f.scores), id(e.x)) if isinstance(e.f, OutputOf) else i, []).append(i)
    found = {}
    for members in groups.values():
        e = outputs[members[0]]
        if isinstance(e.f, OutputOf):
            pairs = attributions_of_outputs(e.f.scores, [outputs[i].f.output for i in members], e.x, baseline=baseline, steps=steps)
        else:
            pairs = [input_x_gradient_and_integrated_gradients(e.f, e.x, baseline=baseline, steps=steps)]
        found.update(zip(members, pairs))
    return [found[i] for i in range(len(outputs))]


def method_scores(e: ScoredOutput, methods: Sequence[str], seed: int, pair: tuple | None = None) -> tuple[dict[str, torch.Tensor], dict]:
    """(method -> token scores (T,), integrated gradients' steps and completeness error) of one output.

    Input x gradient and integrated gradients come from one forward and backward pass together
    (`input_x_gradient_and_integrated_gradients`; `pair`, when given: the output's, from `gradients`, which batches a
    text's outputs); leave-one-out's T removals are one call of `e.predict`."""
    from attnkit.analysis.attribution import input_x_gradient

    scores: dict[str, torch.Tensor] = {}
    figures = {}
    found = {}
    if "ig" in methods:
        ixg, ig = pair or gradients([e])[0]
        found = {"ixg": ixg, "ig": ig}
        figures = {"steps": ig.steps, "relative_error": ig.relative_error}
    for method in methods:
        if method == "attention":
            scores.update({name: row for name, row in e.attention.items() if name not in ("rollout", "flow")})
        elif method in ("rollout", "flow"):
            if method in e.attention:
                scores[method] = e.attention[method]
        elif method in ("ixg", "ig"):
            a = found[method] if method in found else input_x_gradient(e.f, e.x)
            scores[method] = a.scores[e.positions]  # (T,)
        elif method == "loo":
            scores[method] = leave_one_out(e.predict, len(e.tokens), e.p)  # (T,)
        else:  # random
            scores[method] = random_scores(len(e.tokens), seed)  # (T,)
    return {name: s.detach().to("cpu", torch.float64) for name, s in scores.items()}, figures


def output_record(e: ScoredOutput, settings: Settings, seed: int, pair: tuple | None = None) -> dict:
    """One explained output's JSON: its tokens, p, every method's scores and figures (every ranking's removals
    in one call of `e.predict`: `faithfulness_of_rankings`)."""
    scores, figures = method_scores(e, settings.methods, seed, pair)
    record = {"label": e.label, "p": e.p, "tokens": e.tokens, "scores": {}, "comprehensiveness": {}, "sufficiency": {}, "curve": {}}
    for name, m in faithfulness_of_rankings(e.predict, scores, e.p, settings.fractions, settings.curve).items():
        record["scores"][name] = scores[name].tolist()
        record["comprehensiveness"][name] = m.comprehensiveness
        record["sufficiency"][name] = m.sufficiency
        record["curve"][name] = m.curve
    return {**record, "ig": figures} if figures else record


def example_record(source: Source, index: int, text: str, settings: Settings) -> dict:
    """One text's line of examples.jsonl: each output it explains (the random ranking seeded by index and output), the
    gradients of all its outputs in one batch (`gradients`)."""
    outputs = scored_outputs(source, text, settings)
    pairs = gradients(outputs) if "ig" in settings.methods else [None] * len(outputs)
    records = [output_record(e, settings, settings.seed + 1_000_003 * index + j, pair) for j, (e, pair) in enumerate(zip(outputs, pairs))]
    return {"index": index, "text": text, "outputs": records}


def header(source: Source, data: str | Path, settings: Settings) -> dict:
    fields = {k: v for k, v in asdict(settings).items() if k != "removal" or v is not None}
    return {
        "attnkit_faithfulness": FORMAT,
        "model": model_fingerprint(source.files()),
        "data": data_fingerprint(data),
        "settings": json.loads(json.dumps(fields)),
    }


def score_shard(loaded: Source, texts: list[str], data: str | Path, path: Path, records: dict[int, dict], settings: Settings, shard: Shard,
                progress: Callable[[int, int], None] | None) -> None:  # fmt: skip
    """Score this rank's texts (index % size == rank) that no file holds, appending each to `path` and `records`."""
    mine = shard.mine(range(len(texts)))
    done = sum(1 for i in mine if i in records)
    if progress is not None:
        progress(done, len(mine))
    for i in mine:
        if i in records:
            continue
        try:
            records[i] = example_record(loaded, i, texts[i], settings)
        except AttnkitError as e:
            raise type(e)(f"{data}, text {i + 1}: {e}") from None
        append_text(path, json.dumps(records[i]) + "\n")
        done += 1
        if progress is not None:
            progress(done, len(mine))


def run_faithfulness(loaded: Source, source: str, data: str | Path, out: str | Path, settings: Settings = Settings(), limit: int | None = None,
                     progress: Callable[[int, int], None] | None = None, shard: Shard = Shard()) -> dict | None:  # fmt: skip
    """Score every text of `data` (the first `limit`) not yet in OUT's examples files, then write the summary
    (`faithfulness.json`, `.md`, `deletion.png`); returns it. `progress(done, total)` after each text.

    On several ranks (`shard`), each scores its share into its own file (`Shard.file`), then rank 0 gathers every
    rank's records and writes examples.jsonl as one process would have (the same lines, in text order) and the
    summary; the other ranks return None. A text on file anywhere in OUT is not scored again, so one process
    continues a stopped torchrun job and the reverse."""
    from attnkit.data.tables import read_texts
    from attnkit.io import atomic_write_text
    from attnkit.sources.faithfulness_report import write_report

    unknown = sorted(set(settings.methods) - set(METHODS))
    if unknown:
        raise AttnkitError(f"faithfulness: unknown methods {', '.join(unknown)} (known: {', '.join(METHODS)})")
    loaded.check_scored()  # one line, before any text, if the source has nothing the metrics can explain
    texts = read_texts(data, settings.text_column, settings.text2_column)[:limit]
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    path, expected = out / shard.file(EXAMPLES), header(loaded, data, settings)
    records = {r["index"]: r for r in read_progress(path, expected, WHAT) + records_elsewhere(out, EXAMPLES, path, expected, WHAT)}
    score_shard(loaded, texts, data, path, records, settings, shard, progress)
    if shard.size > 1:
        parts = shard.gather({i: records[i] for i in range(shard.rank, len(texts), shard.size)})
        if parts is None:
            return None
        for part in parts:
            records.update(part)
    lines = [json.dumps(expected)] + [json.dumps(records[i]) for i in sorted(records)]  # every rank's and earlier runs' texts
    atomic_write_text(out / EXAMPLES, "\n".join(lines) + "\n")
    run = {"source": source, "data": str(data), "examples": len(texts), "settings": asdict(settings)}
    return write_report([records[i] for i in range(len(texts))], run, out)
