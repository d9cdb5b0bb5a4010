"""Is attention an explanation? One sentence of a trained translation run (tour page 8).

Decodes the sentence greedily, runs the model teacher-forced on its own output to get every
attention map, and for each output token compares four ways of saying which source token it
depended on:

- attention: the last decoder layer's cross attention row (head mean);
- rollout: that row composed with the encoder's attention rollout, C R_enc (`cross_rollout`);
- flow: the same row composed with the encoder's attention flow instead, C F_enc;
- IG: |integrated gradients| of log p(y_t) over the source embeddings (the completeness check
  passes within 1%), the reference the other three are ranked against (Kendall's tau-b).

It prints the four rows of one output token (--output, default the first) and the mean tau over
all output tokens.

    .venv/bin/python docs/tour/code/explanation.py RUN "t3 t1 t4 t1 t5 t9 t2" [--output 0]
"""

from __future__ import annotations

import argparse
import statistics

import torch

from attnkit.analysis.attribution import integrated_gradients
from attnkit.analysis.correlation import kendall_tau
from attnkit.analysis.flow import attention_flow
from attnkit.analysis.rollout import cross_rollout, head_mean
from attnkit.data.batching import collate
from attnkit.data.vocab import BOS, EOS
from attnkit.decode.greedy import greedy
from attnkit.errors import AttnkitError
from attnkit.families import load_run
from attnkit.families.translation.attribute import source_embeddings, token_score


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("run")
    p.add_argument("sentence")
    p.add_argument("--output", type=int, default=0, help="the output token whose rows are printed (0: the first)")
    args = p.parse_args()
    torch.manual_seed(0)
    loaded = load_run(args.run)
    model, v = loaded.model.eval(), loaded.vocabs
    src_pieces = v.src_tokenizer.tokenize(args.sentence)
    b = collate([(v.src_vocab.encode(src_pieces), [])], [0])
    out = greedy(model, b.src, b.src_keep, max_len_a=1.0, max_len_b=5, bos=BOS, eos=EOS)[0].tokens
    b = collate([(v.src_vocab.encode(src_pieces), out)], [0])  # teacher-forced on its own output
    with torch.no_grad():
        maps = model.attentions(b.src, b.src_keep, b.tgt_in)
    enc, cross = [w[0] for w in maps.encoder], [w[0] for w in maps.cross]  # (H, S, S), (H, T, S) per layer
    rows = {
        "attention": head_mean(cross[-1]),  # (T, S)
        "rollout": cross_rollout(enc, cross),  # (T, S): C R_enc
        "flow": head_mean(cross[-1]) @ attention_flow(enc),  # (T, S): C F_enc
    }
    emb = source_embeddings(model, b.src)  # (S, D)
    ig, taus, steps, worst, left_out = {}, {name: [] for name in rows}, set(), 0.0, 0
    for t in range(b.tgt_in.size(1)):
        try:  # log p(y_t | y_<t, x) over the source embeddings: what `attnkit attention RUN TEXT --attribute ig --attribute-target t` scores
            a = integrated_gradients(token_score(model, b.src, b.src_keep, b.tgt_in, t, int(b.tgt_out[0, t])), emb)
        except AttnkitError:  # not complete within 1% at 800 steps: left out and counted, as the benchmarks do
            left_out += 1
            continue
        ig[t] = a.scores.abs()  # (S,)
        steps.add(a.steps)
        worst = max(worst, a.relative_error)
        for name, r in rows.items():
            taus[name].append(kendall_tau(r[t], ig[t]))
    tokens = src_pieces + ["</s>"]
    outputs = v.tgt_vocab.decode(out) + ["</s>"]
    print(f"source: {' '.join(src_pieces)}\noutput: {' '.join(outputs[:-1])}")
    print(f"IG: {len(ig)} outputs, {sorted(steps)} steps, completeness within {100 * worst:.2f}% (<= 1%)")
    if left_out:
        print(f"({left_out} output(s) left out: IG not complete within 1% at 800 steps)")
    t = args.output if args.output in ig else min(ig)
    print(f"\noutput token {t} ({outputs[t]!r}), each row scaled to sum 1:")
    print(f"{'':>10}" + "".join(f"{tok:>7}" for tok in tokens))
    for name, r in {**{k: r[t] for k, r in rows.items()}, "|IG|": ig[t]}.items():
        r = r / r.sum()
        top = tokens[int(r.argmax())]
        print(f"{name:>10}" + "".join(f"{x:7.2f}" for x in r.tolist()) + f"   top: {top}")
    print(f"\nKendall tau with |IG|, mean over the {len(ig)} outputs:")
    for name, values in taus.items():
        values = [x for x in values if x == x]  # a constant row has no tau (NaN)
        print(f"{name:>10} {statistics.mean(values):.2f}")


if __name__ == "__main__":
    main()
