"""Structured self-attention against integrated gradients on SST sentences (a `sase` run).

    .venv/bin/python benchmarks/sst_attention_attribution.py RUN [--dev ../shared/data/sst/trees_dev.txt.gz] [--n 100]

For each of the first --n dev sentences: the class the model predicts, integrated gradients of its
logit over the word embeddings (zero baseline, 50 steps doubled until the completeness check passes
within 1%), and Kendall's tau-b between |IG| per word and (a) each attention hop's row of A, (b) the
mean of the hops. Sentences of one word have no ranking and are left out; sentences whose IG fails
the check at 800 steps are counted in `ig_incomplete`. Prints one JSON line.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics

import torch
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from attnkit.analysis.attribution import integrated_gradients
from attnkit.analysis.correlation import kendall_tau
from attnkit.errors import AttnkitError
from attnkit.families import load_run
from attnkit.families.sentence.codec import words
from attnkit.families.sentence.data import read_sst_trees


def logit_fn(model, keep: torch.Tensor, label: int):
    """f(word embeddings (N, S, E)) = the logit of `label`: the model's `embed` from its embedding output."""

    def f(x):
        N, S = x.shape[:2]
        k = keep.expand(N, -1)  # (N, S)
        packed = pack_padded_sequence(x, k.sum(1).cpu(), batch_first=True, enforce_sorted=False)
        out, _ = model.lstm(packed)
        h, _ = pad_packed_sequence(out, batch_first=True, total_length=S)  # (N, S, 2u)
        m, _ = model.attention(h, k)  # (N, R, 2u)
        return model.classifier(m.flatten(1))[:, label]  # (N,)

    return f


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("run")
    p.add_argument("--dev", default="../shared/data/sst/trees_dev.txt.gz")
    p.add_argument("--n", type=int, default=100)
    p.add_argument("--threads", type=int)
    args = p.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    loaded = load_run(args.run)
    model, v = loaded.model.eval(), loaded.vocabs
    examples, _ = read_sst_trees(args.dev, binary=loaded.run.data.binary)
    taus: dict[str, list[float]] = {}
    correct = incomplete = used = 0
    for e in examples[: args.n]:
        ids = torch.tensor([v.vocab.encode(words(e.text, loaded.run.data.lowercase))])  # (1, S)
        keep = torch.ones_like(ids, dtype=torch.bool)  # (1, S)
        with torch.no_grad():
            out = model(ids, keep)
        label = int(out.logits.argmax(-1))
        correct += v.labels.labels[label] == e.label
        if ids.size(1) < 2:
            continue
        try:
            ig = integrated_gradients(logit_fn(model, keep, label), model.embedding(ids).detach()).scores.abs()  # (S,)
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
        "run": args.run, "sentences": min(args.n, len(examples)), "accuracy": round(100 * correct / min(args.n, len(examples)), 2),
        "tau_sentences": used, "ig_incomplete": incomplete,
        "kendall_tau_ig": {k: round(statistics.mean(t), 3) for k, t in taus.items()},
        "kendall_tau_ig_median": {k: round(statistics.median(t), 3) for k, t in taus.items()},
    }))  # fmt: skip


if __name__ == "__main__":
    main()
