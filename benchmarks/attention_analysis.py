"""Head pruning and attention/attribution agreement of a trained translation Transformer run.

    .venv/bin/python benchmarks/attention_analysis.py RUN --src SRC --ref REF [--n 100] [--attr 30] [--metric accuracy|bleu] [--seeds 0 1 2] [--plot PNG]
    .venv/bin/python benchmarks/attention_analysis.py runs/toy --synthetic    # held-out pairs from the run's synthetic task

1. Head importance (Michel et al. 2019) of every encoder, decoder-self and cross head from the
   teacher-forced loss on the first --n pairs (|dL/dxi| per pair, summed: `attnkit.sources.importance`,
   what `attnkit heads RUN --importance` computes), and the pruning curve:
   the metric as heads are masked in importance order and in a random order per seed of --seeds
   (default: seed 0 alone; `analysis.importance.random_order`, a torch generator seeded with it);
   how many heads go before it drops by 1 point (per seed, and the mean random curve over the seeds). `--metric accuracy`: teacher-forced token accuracy (%);
   `--metric bleu`: sacreBLEU of greedy decoding (the run's max_len_a/b) of the same pairs with the
   heads masked at decoding time. `--plot` draws both curves.
2. For the first --attr pairs (0: skip) and every target position t: integrated gradients (50 steps, checked
   for completeness) of log p(y_t) over the source embeddings (the translation family's `token_score`, what
   `attnkit attention RUN TEXT --attribute ig --attribute-target t` attributes), and Kendall's tau between them and
   (a) each decoder layer's cross attention row t (head mean) and their mean, (b) the cross
   rollout C_l R_enc through each layer's cross attention C_l, and with C averaged over the layers.
Prints one JSON line.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
from pathlib import Path

import torch

from attnkit.analysis.attribution import integrated_gradients
from attnkit.analysis.correlation import kendall_tau
from attnkit.analysis.importance import heads_before_drop, pruning_curve, pruning_order, random_order
from attnkit.analysis.rollout import cross_rollout, head_mean
from attnkit.data.batching import collate
from attnkit.data.text import read_parallel
from attnkit.data.vocab import BOS, EOS
from attnkit.decode.greedy import greedy
from attnkit.errors import AttnkitError
from attnkit.families import load_run
from attnkit.families.translation.attribute import source_embeddings, token_score
from attnkit.families.translation.data.synthetic import generate
from attnkit.models.head_mask import MaskedDecoding
from attnkit.sources.importance import importance, layout, scores, split_mask


def pairs(args, loaded) -> list[tuple[str, str]]:
    if args.synthetic:
        s = loaded.run.data.synthetic
        return generate(s.task, args.n, vocab_size=s.vocab_size, min_len=s.min_len, max_len=s.max_len, seed=s.seed + 1)
    return read_parallel(args.src, args.ref)[: args.n]  # plain or .gz


def head_name(layer: int, head: int, le: int, ld: int) -> str:
    """Row `layer` of the (le + 2 ld, H) mask as `enc0.h1`, `self2.h0`, `cross1.h3`."""
    if layer < le:
        return f"enc{layer}.h{head}"
    kind, index = ("self", layer - le) if layer < le + ld else ("cross", layer - le - ld)
    return f"{kind}{index}.h{head}"


def bleu_metric(loaded, examples, refs: list[str], split):
    """metric(mask) -> sacreBLEU of greedy decoding of the examples' sources with the heads masked."""
    import sacrebleu

    d, v = loaded.run.decode, loaded.vocabs
    sources = [(src, []) for src, _ in examples]  # collate appends EOS
    batches = [range(i, min(i + 100, len(examples))) for i in range(0, len(examples), 100)]

    def bleu(mask):
        masked, out = MaskedDecoding(loaded.model, split(mask)), []
        for index in batches:
            b = collate(sources, index)
            hyps = greedy(masked, b.src, b.src_keep, max_len_a=d.max_len_a, max_len_b=d.max_len_b, bos=BOS, eos=EOS)
            out += [v.tgt_tokenizer.detokenize(v.tgt_vocab.decode(h.tokens)) for h in hyps]
        return sacrebleu.corpus_bleu(out, [refs]).score

    return bleu


def random_curves(metric, shape: tuple[int, int], seeds) -> dict[int, list[tuple[int, float]]]:
    """Seed -> the pruning curve of the heads masked in that seed's random order."""
    return {seed: pruning_curve(metric, random_order(shape, seed=seed), shape) for seed in seeds}


def random_figures(by_random: dict[int, list[tuple[int, float]]]) -> dict:
    """The JSON figures of the random orders: the first seed's as before (`curve_random`, `random`), and every seed's."""
    first = next(iter(by_random.values()))
    return {
        "seeds": list(by_random), "curve_random": [round(a, 2) for _, a in first],
        "curves_random": {str(s): [round(a, 2) for _, a in c] for s, c in by_random.items()},
        "heads_before_1pt_drop_random": {str(s): heads_before_drop(c, 1.0) for s, c in by_random.items()},
        "curve_random_mean": [round(statistics.mean(c[k][1] for c in by_random.values()), 2) for k in range(len(first))],
    }  # fmt: skip


def plot(path: str, by_importance, by_random: dict[int, list[tuple[int, float]]], metric: str, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3.6), dpi=100)
    ax.plot(*zip(*by_importance), marker="o", ms=3, label="importance order (least important first)")
    for seed, curve in by_random.items():
        ax.plot(*zip(*curve), marker="s", ms=3, alpha=0.8 if len(by_random) > 1 else 1.0, label=f"random order (seed {seed})")
    ax.axhline(by_importance[0][1] - 1.0, color="grey", lw=0.8, ls="--", label="all heads - 1")
    ax.set(xlabel="heads masked", ylabel=metric, title=title)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("run")
    p.add_argument("--src")
    p.add_argument("--ref")
    p.add_argument("--synthetic", action="store_true")
    p.add_argument("--n", type=int, default=100)
    p.add_argument("--attr", type=int, default=30)
    p.add_argument("--metric", choices=["accuracy", "bleu"], default="accuracy")
    p.add_argument("--seeds", type=int, nargs="+", default=[0], help="seeds of the random orders, one curve each (default: 0)")
    p.add_argument("--plot", help="write the pruning curves to this PNG")
    p.add_argument("--threads", type=int)
    return p


def main() -> None:
    args = parser().parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    loaded = load_run(args.run)
    model, v = loaded.model.eval(), loaded.vocabs
    data = pairs(args, loaded)
    examples = [(v.src_vocab.encode(v.src_tokenizer.tokenize(a)), v.tgt_vocab.encode(v.tgt_tokenizer.tokenize(b))) for a, b in data]
    lay = layout(model, args.run)
    le, ld, H = lay.encoder, lay.decoder, lay.heads
    shape = lay.shape
    teacher_forced = scores(model, lay, examples)
    metric = (
        (lambda mask: teacher_forced(mask)["accuracy"])
        if args.metric == "accuracy"
        else bleu_metric(loaded, examples, [b for _, b in data], lambda m: split_mask(m, lay))
    )
    found = importance(model, lay, examples)
    by_importance = pruning_curve(metric, pruning_order(found), shape)
    by_random = random_curves(metric, shape, dict.fromkeys(args.seeds))
    if args.plot:
        plot(args.plot, by_importance, by_random, args.metric, f"{args.run}: {len(data)} pairs, {shape[0] * H} heads")
    taus = correlations(model, examples[: args.attr])
    print(json.dumps({
        "run": args.run, "pairs": len(data), "heads": shape[0] * H, "metric": args.metric, args.metric: round(by_importance[0][1], 2),
        "heads_before_1pt_drop": {"importance": heads_before_drop(by_importance, 1.0), "random": heads_before_drop(by_random[args.seeds[0]], 1.0)},
        "order": [head_name(layer, head, le, ld) for layer, head in pruning_order(found)],
        "importance": [[round(x, 3) for x in row] for row in found.tolist()],
        "curve_importance": [round(a, 2) for _, a in by_importance], **random_figures(by_random),
        "ig_incomplete": len(taus.pop("ig_incomplete", [])), "tau_outputs": max(map(len, taus.values()), default=0),
        "kendall_tau_ig": {k: round(statistics.mean(t), 3) for k, t in taus.items()},
    }))  # fmt: skip


def correlations(model, examples) -> dict[str, list[float]]:
    """Kendall's tau between |IG| on the source embeddings and, per decoder layer l, (a) its cross attention
    (head mean, `cross<l>`), (b) the cross rollout C_l R_enc (`rollout<l>`); `cross_mean` and `rollout_mean`
    average C over the layers. One tau per output position; outputs whose IG fails the completeness check
    (typically f(x) - f(baseline) near 0, where 1% is a tiny absolute error) are counted in `ig_incomplete`."""
    taus: dict[str, list[float]] = {}
    for src_ids, tgt_ids in examples:
        b = collate([(src_ids, tgt_ids)], [0])
        maps = model.attentions(b.src, b.src_keep, b.tgt_in)
        enc = [w[0] for w in maps.encoder]  # (H, S, S) per layer
        cross = [w[0] for w in maps.cross]  # (H, T, S) per layer
        rows = {f"cross{i}": head_mean(c) for i, c in enumerate(cross)}  # (T, S) each
        rows |= {f"rollout{i}": cross_rollout(enc, cross, layer=i) for i in range(len(cross))}
        rows |= {"cross_mean": torch.stack([head_mean(c) for c in cross]).mean(0), "rollout_mean": cross_rollout(enc, cross, layer=None)}
        emb = source_embeddings(model, b.src)  # (S, D)
        for t in range(b.tgt_in.size(1)):
            try:
                ig = integrated_gradients(token_score(model, b.src, b.src_keep, b.tgt_in, t, int(b.tgt_out[0, t])), emb).scores.abs()  # (S,)
            except AttnkitError:  # not complete within 1% at 800 steps: left out, counted
                taus.setdefault("ig_incomplete", []).append(1.0)
                continue
            for name, row in rows.items():
                tau = kendall_tau(row[t], ig)
                if not math.isnan(tau):
                    taus.setdefault(name, []).append(tau)
    return taus


if __name__ == "__main__":
    main()
