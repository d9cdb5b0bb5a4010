"""The papers' tables of "is attention an explanation?", measured with `attnkit faithfulness` (docs/analysis.md).

    .venv/bin/python benchmarks/faithfulness_papers.py jw RUN --uniform UNIFORM_RUN [--dev DEV] --out DIR [--limit N] [--permutations 100]
    .venv/bin/python benchmarks/faithfulness_papers.py az SOURCE --data FILE --out DIR [--limit N] [--text-column C]

`jw`: Jain & Wallace (2019) on a sentence classifier run that has their model, a bi-LSTM under one
additive tanh attention distribution over the words (`sase` with r = 1, coef = 0: Lin et al.'s
A = softmax(w_s2 tanh(W_s1 H^T)) with one hop is their additive attention with a learned query),
over the run's validation split (SST: the dev trees; SNLI: the premises held out of the staged dev
file the run trained on, `data.dev_fraction`) or DEV, read by the run's family (`--limit`: its first N):

- their Table 2: Kendall's tau between attention and gradients (|input x gradient|, their gradient
  through the one-hot input), attention and leave-one-out (|p(y|x) - p(y|x without the word)|, where
  they take the total variation of the whole output distribution), gradients and leave-one-out,
  mean ± std over the dev texts, and per predicted class;
- the same three taus with their released code's definitions (`kendall_tau_jw_code`,
  `families.classification.jain_wallace.jw_code_scores`): the gradient with the attention detached,
  |x . grad p| summed over the classes, and leave-one-out by deleting the word, the mean |change| of the
  class probabilities (benchmarks/jw_number_for_number.py: over seeds, beside their released values);
- their Section 4.2 permutation experiment: the attention weights over the (premise's) words
  permuted `--permutations` times, the median total variation distance between the output
  distributions, per text; its mean and median over the texts, by the text's largest attention weight;
- Wiegreffe & Pinter (2019), sec. 3's uniform baseline: UNIFORM_RUN is the same model trained with
  the attention frozen to uniform, which is `model.pooling: mean` (the mean of the bi-LSTM states);
  the accuracy of both on the whole validation split (or DEV) and their difference.

`az`: Abnar & Zuidema (2020) on a model with layers of self-attention (a Hugging Face sequence
classifier, or any source `attnkit faithfulness` reads): Spearman's rho and Kendall's tau of the
last layer's raw attention, of rollout and of flow against leave-one-out (their input blanking) and
|input x gradient|, mean over the texts; they report rollout and flow agreeing better than raw
attention.

Both print one JSON line and write it to DIR/<jw|az>.json, beside `attnkit faithfulness`'s own
outputs in DIR/faithfulness (ERASER comprehensiveness and sufficiency, deletion curves). The line
records the command, the attnkit runs' configs (data, model, train), the CPU (as `attnkit doctor`
names it) and the date; no timing (the figures are accuracies and correlations, whatever the machine).
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

from attnkit.analysis.correlation import kendall_tau
from attnkit.families.classification.jain_wallace import jw_code_scores
from attnkit.io import atomic_write_text
from attnkit.precision import cpu_model
from attnkit.sources import open_source
from attnkit.sources.faithfulness import EXAMPLES, Settings, run_faithfulness

MAX_ATTENTION_BINS = (0.0, 0.25, 0.5, 0.75, 1.0)  # Jain & Wallace's Figure 6 groups texts by their largest weight


def spearman(x: list[float], y: list[float]) -> float:
    """Spearman's rho: Pearson's r of the ranks (ties get their mean rank); NaN if either is constant."""

    def ranks(v: list[float]) -> list[float]:
        order = sorted(range(len(v)), key=v.__getitem__)
        out = [0.0] * len(v)
        i = 0
        while i < len(order):
            j = i
            while j + 1 < len(order) and v[order[j + 1]] == v[order[i]]:
                j += 1
            for k in range(i, j + 1):
                out[order[k]] = (i + j) / 2
            i = j + 1
        return out

    rx, ry = ranks(x), ranks(y)
    mx, my = statistics.fmean(rx), statistics.fmean(ry)
    sxy = sum((a - mx) * (b - my) for a, b in zip(rx, ry))
    sxx, syy = sum((a - mx) ** 2 for a in rx), sum((b - my) ** 2 for b in ry)
    return math.nan if sxx == 0 or syy == 0 else sxy / math.sqrt(sxx * syy)


def summary(values: list[float]) -> dict:
    values = [v for v in values if not math.isnan(v)]
    if not values:
        return {"mean": None, "std": None, "n": 0}
    return {"mean": round(statistics.fmean(values), 4), "std": round(statistics.stdev(values), 4) if len(values) > 1 else 0.0, "n": len(values)}


def outputs(folder: Path) -> list[dict]:
    """Every explained output in folder/examples.jsonl."""
    lines = (folder / EXAMPLES).read_text(encoding="utf-8").splitlines()[1:]
    return [o for line in lines for o in json.loads(line)["outputs"]]


def correlations(outs: list[dict], pairs: list[tuple[str, str]], absolute: set[str], measure) -> dict:
    """measure(a, b) per output (|scores| for the methods in `absolute`), summarised per pair."""

    def get(o: dict, name: str) -> list[float]:
        return [abs(v) for v in o["scores"][name]] if name in absolute else o["scores"][name]

    return {f"{a} vs {b}": summary([measure(get(o, a), get(o, b)) for o in outs if len(o["tokens"]) >= 2]) for a, b in pairs}


def config(source) -> dict | None:
    """An attnkit run's data, model and train sections as it trained (None for a Hugging Face model)."""
    return source.loaded.run.model_dump(mode="json", include={"data", "model", "train"}) if source.origin == "run" else None


def measured() -> dict:
    """The command as typed, the CPU (`attnkit doctor`'s name for it) and the date."""
    command = shlex.join(["benchmarks/faithfulness_papers.py", *sys.argv[1:]])
    return {"command": command, "cpu": cpu_model(), "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")}


def tau(x: list[float], y: list[float]) -> float:
    return kendall_tau(torch.tensor(x), torch.tensor(y))


def permutation_tvd(loaded, text: str, permutations: int, seed: int) -> tuple[float, float]:
    """(median total variation distance between the outputs with the (first) attention permuted and without,
    the largest attention weight) of one text (Jain & Wallace sec. 4.2)."""
    from attnkit.families.classification.infer import model_inputs

    model = loaded.model
    inputs = model_inputs(loaded, text)  # (tokens, keep[, tokens2, keep2]), each (1, S)
    with torch.no_grad():
        out = model(*inputs)
    p, a = out.logits[0].double().softmax(-1), out.attention[0]  # (C,), (1, S)
    n = a.size(-1)
    g = torch.Generator().manual_seed(seed)
    perms = torch.stack([torch.randperm(n, generator=g) for _ in range(permutations)])  # (N, S)
    seen = []

    def hook(module, args, output):
        if seen:  # a pair's hypothesis keeps its own attention
            return None
        seen.append(True)
        h, (_, weights) = args[2] if len(args) > 2 else args[0], output  # (N, S, 2u): additive attention's values or H; (N, R, S)
        shuffled = weights.gather(-1, perms.unsqueeze(1).expand_as(weights))  # (N, R, S)
        return torch.einsum("brs,bsd->brd", shuffled, h), shuffled

    handle = model.attention.register_forward_hook(hook)
    try:
        with torch.no_grad():
            q = model(*(t.expand(permutations, -1) for t in inputs)).logits.double().softmax(-1)  # (N, C)
    finally:
        handle.remove()
    tvd = 0.5 * (q - p).abs().sum(-1)  # (N,)
    return float(tvd.median()), float(a.max())


def accuracy(loaded, examples: list) -> float:
    """The share of `examples` the run classifies right."""
    from attnkit.families.classification.infer import classify_texts

    texts = [e.text if e.text2 is None else f"{e.text}\t{e.text2}" for e in examples]
    return sum(r.label == e.label for r, e in zip(classify_texts(loaded, texts), examples)) / len(examples)


def dev_examples(loaded, dev: str | None) -> list:
    """The file `dev` as the run's family reads it, or, without one, the run's own validation split (SST's dev
    trees; for SNLI, the premises the run held out of the dev file it trained on)."""
    from attnkit.families.classification.corpus import classify_splits
    from attnkit.families.classification.infer import read_eval_file

    return read_eval_file(loaded, dev) if dev else classify_splits(loaded.run.data)[1]


def split_name(loaded, dev: str | None) -> str:
    """What `dev_examples` read, in words."""
    from attnkit.families.classification.corpus import classify_files

    d = loaded.run.data
    if dev:
        return dev
    if d.corpus == "sst":
        return f"{classify_files(d)[1]} (the dev trees' sentences: the run's validation split)"
    if d.corpus == "snli" and d.train is None:
        return f"the {d.dev_fraction:.0%} of the premises of {classify_files(d)[0]} the run held out of training (its validation split)"
    return f"{d.valid} (the run's validation split)"


def jain_wallace(args: argparse.Namespace) -> dict:
    source = open_source(args.run)
    loaded = source.loaded
    if loaded.run.model.r != 1 or loaded.run.model.pooling != "attention":
        raise SystemExit(f"{args.run}: Jain & Wallace's model has one attention distribution: train with --set model.r=1 (pooling attention)")
    dev = dev_examples(loaded, args.dev)
    examples = dev[: args.limit]
    pair = examples[0].text2 is not None
    out = Path(args.out)
    data = out / "dev.jsonl"
    atomic_write_text(data, "".join(json.dumps({"text": e.text, "text2": e.text2}) + "\n" for e in examples))
    settings = Settings(methods=("attention", "ixg", "loo", "random"), text2_column="text2" if pair else None)
    run_faithfulness(source, args.run, data, out / "faithfulness", settings)
    outs = outputs(out / "faithfulness")
    attention = next(name for name in outs[0]["scores"] if "/layer" in name)
    pairs = [(attention, "ixg"), (attention, "loo"), ("ixg", "loo")]
    by_label = {label: correlations([o for o in outs if o["label"] == label], pairs, {"ixg", "loo"}, tau) for label in sorted({o["label"] for o in outs})}
    texts = [e.text if e.text2 is None else f"{e.text}\t{e.text2}" for e in examples]
    code = [{"gradient": s.gradient, "loo": s.loo} for s in (jw_code_scores(loaded, text) for text in texts)]  # one output per text, in order
    by_code = [{"tokens": o["tokens"], "scores": {attention: o["scores"][attention], **c}} for o, c in zip(outs, code)]
    tvds = [permutation_tvd(loaded, text, args.permutations, seed=i) for i, text in enumerate(texts)]
    bins = {}
    for lo, hi in zip(MAX_ATTENTION_BINS, MAX_ATTENTION_BINS[1:]):
        inside = [t for t, top in tvds if lo <= top < hi or (hi == 1.0 and top == 1.0)]
        bins[f"{lo:.0%}-{hi:.0%}"] = {"texts": len(inside), "median_tvd": round(statistics.median(inside), 4) if inside else None}
    uniform = open_source(args.uniform)
    right = {"attention": accuracy(loaded, dev), "uniform": accuracy(uniform.loaded, dev)}  # the whole dev set
    return {
        "paper": "Jain & Wallace 2019; Wiegreffe & Pinter 2019", **measured(), "run": args.run, "uniform_run": args.uniform,
        "run_config": config(source), "uniform_config": config(uniform),
        "dev": split_name(loaded, args.dev), "dev_examples": len(dev), "texts": len(examples),
        "kendall_tau": correlations(outs, pairs, {"ixg", "loo"}, tau), "kendall_tau_by_predicted_class": by_label,
        "kendall_tau_jw_code": correlations(by_code, [(attention, "gradient"), (attention, "loo"), ("gradient", "loo")], set(), tau),
        "permutation": {"permutations": args.permutations, "mean_of_median_tvd": round(statistics.fmean(t for t, _ in tvds), 4),
                        "median_of_median_tvd": round(statistics.median(t for t, _ in tvds), 4), "by_max_attention": bins},
        "uniform_baseline": {"accuracy_attention": right["attention"], "accuracy_uniform": right["uniform"],
                             "difference": right["attention"] - right["uniform"]},
    }  # fmt: skip


def abnar_zuidema(args: argparse.Namespace) -> dict:
    source = open_source(args.source)
    out = Path(args.out)
    settings = Settings(methods=("attention", "rollout", "flow", "ixg", "loo", "random"), text_column=args.text_column, text2_column=args.text2_column)
    run_faithfulness(source, args.source, args.data, out / "faithfulness", settings, args.limit)
    outs = outputs(out / "faithfulness")
    last = [name for name in outs[0]["scores"] if "/layer" in name][-1]
    pairs = [(m, ref) for ref in ("loo", "ixg") for m in (last, "rollout", "flow", "random")]
    return {
        "paper": "Abnar & Zuidema 2020", **measured(), "source": args.source, "source_config": config(source), "data": args.data,
        "outputs": len(outs), "raw_attention": last,
        "spearman": correlations(outs, pairs, {"ixg"}, spearman), "kendall_tau": correlations(outs, pairs, {"ixg"}, tau),
    }  # fmt: skip


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="paper", required=True)
    jw = sub.add_parser("jw", help="Jain & Wallace 2019 (and Wiegreffe & Pinter's uniform baseline) on a sase run with r = 1")
    jw.add_argument("run")
    jw.add_argument("--uniform", required=True, help="the same model trained with --set model.pooling=mean")
    jw.add_argument("--dev", help="a dev file, read by the run's family (SST trees, SNLI TSV, labelled TSV/CSV/JSONL); default: the run's validation split")
    jw.add_argument("--permutations", type=int, default=100)
    az = sub.add_parser("az", help="Abnar & Zuidema 2020 on a self-attention classifier")
    az.add_argument("source")
    az.add_argument("--data", required=True)
    az.add_argument("--text-column", default="text")
    az.add_argument("--text2-column")
    for q in (jw, az):
        q.add_argument("--out", required=True)
        q.add_argument("--limit", type=int)
        q.add_argument("--threads", type=int)
    args = p.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    result = jain_wallace(args) if args.paper == "jw" else abnar_zuidema(args)
    atomic_write_text(Path(args.out) / f"{args.paper}.json", json.dumps(result, indent=1) + "\n")
    print(json.dumps(result))


if __name__ == "__main__":
    main()
