"""Jain & Wallace (2019) number for number: their Table 2's three Kendall taus with their released code's
definitions, over several seeds, beside their released values (docs/analysis.md, issue #61).

    .venv/bin/python benchmarks/jw_number_for_number.py RUN [RUN ...] --out FILE.json [--their sst|snli] [--removal delete] [--limit N]

Each RUN is a sentence classifier trained with one seed (`attnkit train jw-sst2 --set train.seed=S`, after
`scripts/wink_vectors.py` has written the preset's word vectors: docs/analysis.md). Over the
run's validation split (SST: the dev trees' sentences; their figures are on SST's test split, held out here),
kept as their `DatasetBC` keeps texts (SST: more than 5 words and fewer than the longest, `filterbylength`
with min_length=5), per text and per definition (`families.classification.jain_wallace.DEFINITIONS`), the
three taus: attention vs gradient, attention vs leave-one-out, gradient vs leave-one-out. Per run: each
tau's mean, std (numpy's, ddof 0, as theirs), the texts it counts (a constant measure gives NaN, left out)
and a percentile bootstrap 95% interval of the mean over the texts (`analysis.correlation.bootstrap_ci`,
seeded). Over the runs: the mean of the runs' means, their spread (min, max), and the bootstrap interval of
that mean (the texts resampled, each text's tau averaged over the runs). Beside each: their released value
(`graph_outputs/CorrStats_kendalltau/<task>+lstm+tanh.csv`, under the row their code stores it in:
`jain_wallace.THEIR_ROWS`) and whether ours is within 0.03 of it or within the runs' spread.

Writes FILE (JSON, with the command, the CPU as `attnkit doctor` names it, and the date) and prints it as one line.
With `--keep DIR`, each run's figures and per-text taus are kept in DIR (named by the run, the removal, the task
and the limit) and read back by a later call: the runs can be measured by one call each, at once, and then put
together by one more.
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import shlex
import statistics
import sys
from pathlib import Path

import torch

from attnkit.analysis.correlation import bootstrap_ci, kendall_tau
from attnkit.families.classification.corpus import classify_splits
from attnkit.families.classification.infer import classify_texts, tokenize
from attnkit.families.classification.jain_wallace import DEFINITIONS, PAIRS, REMOVALS, THEIR_ROWS, jw_code_scores, jw_code_taus
from attnkit.io import atomic_write_text
from attnkit.precision import cpu_model
from attnkit.sources import open_source
from attnkit.sources.faithfulness import method_scores

# successar/AttentionExplanation, graph_outputs/CorrStats_kendalltau/{sst,snli}+lstm+tanh.csv: row -> (mean, std)
THEIRS = {
    "sst": {"ag": (0.29134283404271316, 0.19116235107388305), "al": (0.3511545853457849, 0.21094203647828036), "gl": (0.6558694976630044, 0.16321927491603963)},
    "snli": {"ag": (0.2895343660893371, 0.2372989217616043), "al": (0.3137637517096388, 0.21644461374814597), "gl": (0.24019076295209268, 0.21977488494988556)},
}
MIN_WORDS = {"sst": 6, "snli": 1}  # their filterbylength: SST min_length=5 keeps texts of more than 5 words
TOLERANCE = 0.03  # issue 61: a mean within 0.03 of theirs (or theirs within the runs' spread)


def their_texts(examples: list, loaded, task: str) -> list:
    """The examples their Dataset keeps: at least MIN_WORDS words and fewer than the longest (SST)."""
    lengths = [len(tokenize(loaded, e.text)) for e in examples]
    longest = max(lengths) if task == "sst" else math.inf
    return [e for e, n in zip(examples, lengths) if MIN_WORDS[task] <= n < longest]


def attnkit_taus(source, text: str) -> dict[str, float]:
    """The three taus with `attnkit faithfulness`'s generic definitions (jain_wallace's docstring)."""
    (e,) = source.scored_outputs(text, False, False)
    if len(e.tokens) < 2:
        return dict.fromkeys(PAIRS, math.nan)
    s = method_scores(e, ("attention", "ixg", "loo"), 0)[0]
    a = next(v for k, v in s.items() if "/layer" in k)
    g, loo = s["ixg"].abs(), s["loo"].abs()
    return {"attention vs gradient": kendall_tau(a, g), "attention vs loo": kendall_tau(a, loo), "gradient vs loo": kendall_tau(g, loo)}


def summary(taus: list[float], resamples: int) -> dict:
    """Mean, std (ddof 0), count and bootstrap 95% interval of the finite taus."""
    v = [t for t in taus if not math.isnan(t)]
    lo, hi = bootstrap_ci(torch.tensor(v, dtype=torch.float64), resamples, seed=0)
    return {"mean": statistics.fmean(v), "std": statistics.pstdev(v), "n": len(v), "nan": len(taus) - len(v), "ci95": [lo, hi]}


def over_runs(per_run: list[list[float]], resamples: int, theirs: tuple[float, float]) -> dict:
    """The runs' means: their mean, spread, the bootstrap interval (texts resampled, each text's runs averaged), and theirs."""
    means = [statistics.fmean([t for t in taus if not math.isnan(t)]) for taus in per_run]
    texts = [statistics.fmean(ts) for ts in zip(*per_run) if not any(math.isnan(t) for t in ts)]
    lo, hi = bootstrap_ci(torch.tensor(texts, dtype=torch.float64), resamples, seed=0)
    mean = statistics.fmean(means)
    spread = [min(means), max(means)]
    return {
        "mean": mean, "spread": spread, "ci95": [lo, hi], "texts": len(texts), "theirs": theirs[0], "theirs_std": theirs[1],
        "difference": mean - theirs[0], "within_tolerance": abs(mean - theirs[0]) <= TOLERANCE, "within_spread": spread[0] <= theirs[0] <= spread[1],
    }  # fmt: skip


def measure_run(run: str, args: argparse.Namespace) -> tuple[dict, dict[str, dict[str, list[float]]]]:
    """(the run's figures, definition -> pair -> per-text taus) over its validation split."""
    source = open_source(run)
    loaded = source.loaded
    dev = classify_splits(loaded.run.data)[1]
    examples = their_texts(dev, loaded, args.their)[: args.limit]
    texts = [e.text if e.text2 is None else f"{e.text}\t{e.text2}" for e in examples]
    taus = {d: {p: [] for p in PAIRS} for d in DEFINITIONS}
    for text in texts:
        for d, found in (("jw-code", jw_code_taus(jw_code_scores(loaded, text, args.removal))), ("attnkit", attnkit_taus(source, text))):
            for p in PAIRS:
                taus[d][p].append(found[p])
    every = [e.text if e.text2 is None else f"{e.text}\t{e.text2}" for e in dev]
    right = sum(r.label == e.label for r, e in zip(classify_texts(loaded, every), dev)) / len(dev)
    figures = {"run": run, "seed": loaded.run.train.seed, "dev_accuracy": right, "dev_examples": len(dev), "texts": len(texts),
               "kendall_tau": {d: {p: summary(taus[d][p], args.resamples) for p in PAIRS} for d in DEFINITIONS}}  # fmt: skip
    return figures, taus


def measured_run(run: str, args: argparse.Namespace) -> tuple[dict, dict[str, dict[str, list[float]]]]:
    """`measure_run`, or what an earlier call kept of it (module docstring)."""
    if args.keep is None:
        return measure_run(run, args)
    kept = Path(args.keep) / f"{Path(run).resolve().as_posix().replace('/', '_')}-{args.removal}-{args.their}-{args.limit}.json"
    if not kept.is_file():
        kept.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(kept, json.dumps(measure_run(run, args)))
    figures, taus = json.loads(kept.read_text(encoding="utf-8"))
    return figures, taus


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("runs", nargs="+", help="the runs, one seed each")
    p.add_argument("--out", required=True, help="the result file (JSON)")
    p.add_argument("--their", choices=sorted(THEIRS), default="sst", help="their released values to compare with, and their text filter")
    p.add_argument("--removal", choices=REMOVALS, default="delete", help="jw-code's leave-one-out removal (theirs: delete)")
    p.add_argument("--limit", type=int, help="the first N kept texts")
    p.add_argument("--resamples", type=int, default=10_000)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--keep", help="a folder to keep each run's figures in, and to read them back from (module docstring)")
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    measured = [measured_run(run, args) for run in args.runs]
    runs = [m[0] for m in measured]
    result = {
        "paper": "Jain & Wallace 2019, Table 2 (their released CorrStats_kendalltau)", "command": shlex.join(["benchmarks/jw_number_for_number.py", *sys.argv[1:]]),
        "cpu": cpu_model(), "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "task": args.their, "removal": args.removal, "their_rows": THEIR_ROWS, "tolerance": TOLERANCE, "runs": runs,
        "run_config": open_source(args.runs[0]).loaded.run.model_dump(mode="json", include={"data", "model", "train"}),
        "over_runs": {d: {p: over_runs([m[1][d][p] for m in measured], args.resamples, THEIRS[args.their][THEIR_ROWS[p]]) for p in PAIRS} for d in DEFINITIONS},
    }  # fmt: skip
    atomic_write_text(Path(args.out), json.dumps(result, indent=1) + "\n")
    print(json.dumps(result))


if __name__ == "__main__":
    main()
