"""Structured self-attention against integrated gradients on SST sentences (a `sase` run).

    .venv/bin/python benchmarks/sst_attention_attribution.py RUN [--dev ../shared/data/sst/trees_dev.txt.gz] [--n 100] [--score logit]

For each of the first --n dev sentences: the class the model predicts, integrated gradients of its
log-probability (`--score logit`: its logit) over the word embeddings (zero baseline, 50 steps
doubled until the completeness check passes within 1%), and Kendall's tau-b between |IG| per word
and (a) each attention hop's row of A, (b) the mean of the hops. The score is the family's own
(`families.classification.explore.class_score`, the f of `attnkit attention RUN TEXT --attribute ig`).
Sentences of one word have no ranking and are left out; sentences whose IG fails the check at 800
steps are counted in `ig_incomplete`. Prints one JSON line.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics

import torch

from attnkit.analysis.attribution import integrated_gradients
from attnkit.analysis.correlation import kendall_tau
from attnkit.errors import AttnkitError
from attnkit.families import load_run
from attnkit.families.classification.data import read_sst_trees
from attnkit.families.classification.explore import class_score
from attnkit.families.classification.infer import tokenize


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("run")
    p.add_argument("--dev", default="../shared/data/sst/trees_dev.txt.gz")
    p.add_argument("--n", type=int, default=100)
    p.add_argument("--threads", type=int)
    p.add_argument(
        "--score", choices=("log_prob", "logit"), default="log_prob", help="what IG attributes: the predicted class's log-probability (default) or logit"
    )
    args = p.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    loaded = load_run(args.run)
    model, v = loaded.model.eval(), loaded.vocabs
    examples, _ = read_sst_trees(args.dev, binary=loaded.run.data.binary)
    taus: dict[str, list[float]] = {}
    correct = incomplete = used = 0
    for e in examples[: args.n]:
        ids = torch.tensor([v.vocab.encode(tokenize(loaded, e.text))])  # (1, S)
        keep = torch.ones_like(ids, dtype=torch.bool)  # (1, S)
        with torch.no_grad():
            out = model(ids, keep)
        label = int(out.logits.argmax(-1))
        correct += v.labels.labels[label] == e.label
        if ids.size(1) < 2:
            continue
        try:
            f = class_score(model, (ids, keep), label, logit=args.score == "logit")
            ig = integrated_gradients(f, model.embedding(ids).detach()).scores.abs()  # (S,)
        except AttnkitError:
            incomplete += 1
            continue
        used += 1
        a = out.attention[0]  # (R, S)
        rows = {f"hop{r + 1}": a[r] for r in range(a.size(0))} | {"hop_mean": a.mean(0)}
        for name, row in rows.items():
            tau = kendall_tau(row, ig)
            if not math.isnan(tau):
                taus.setdefault(name, []).append(tau)
    print(json.dumps({
        "run": args.run, "score": args.score, "sentences": min(args.n, len(examples)), "accuracy": round(100 * correct / min(args.n, len(examples)), 2),
        "tau_sentences": used, "ig_incomplete": incomplete,
        "kendall_tau_ig": {k: round(statistics.mean(t), 3) for k, t in taus.items()},
        "kendall_tau_ig_median": {k: round(statistics.median(t), 3) for k, t in taus.items()},
    }))  # fmt: skip


if __name__ == "__main__":
    main()
