"""The bottleneck of one fixed vector, measured (tour page 1).

Trains three of attnkit's RNN encoder-decoders (`RNNSeq2Seq`) on the same copy task (the target
repeats a random source sequence of 3 to 24 tokens) for the same number of updates: `none`
(Sutskever et al. 2014: the source reaches the decoder only through the encoder's final state),
`context` (Cho et al. 2014: that final state is also fed to every decoder step) and `bahdanau`
(an attention over all encoder states). Then it decodes held-out sequences greedily
(`attnkit.decode.greedy`) and prints the share of correct tokens by source length.

    .venv/bin/python docs/tour/code/bottleneck.py [--steps 300] [--hidden 32]
"""

from __future__ import annotations

import argparse
import json
import random

import torch

from attnkit.data.batching import collate
from attnkit.data.vocab import BOS, EOS, Vocabulary
from attnkit.decode.greedy import greedy
from attnkit.families.translation.data.synthetic import generate
from attnkit.families.translation.rnn import RNNSeq2Seq
from attnkit.models.losses import label_smoothed_nll

BUCKETS = [(3, 8), (9, 16), (17, 24)]


def encode(vocab: Vocabulary, pairs: list[tuple[str, str]]) -> list[tuple[list[int], list[int]]]:
    return [(vocab.encode(s.split()), vocab.encode(t.split())) for s, t in pairs]


def train(attention: str, data: list, vocab: Vocabulary, steps: int, hidden: int, seed: int) -> RNNSeq2Seq:
    torch.manual_seed(seed)
    model = RNNSeq2Seq(src_vocab_size=len(vocab), tgt_vocab_size=len(vocab), attention=attention, input_feed=False,
                       embed_dim=32, hidden=hidden, dropout=0.0)  # fmt: skip
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    rng = random.Random(seed)
    for _ in range(steps):
        batch = collate(data, rng.sample(range(len(data)), 32))
        features = model.features(batch.src, batch.src_keep, batch.tgt_in)  # (B, T, H)
        loss, _ = label_smoothed_nll(features[batch.tgt_keep], batch.tgt_out[batch.tgt_keep], weight=model.output_weight, epsilon=0.0)
        optimizer.zero_grad()
        (loss / batch.n_tgt_tokens).backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
    return model.eval()


def accuracy_by_length(model: RNNSeq2Seq, test: list) -> list[float]:
    batch = collate(test, range(len(test)))
    hyps = greedy(model, batch.src, batch.src_keep, max_len_a=1.0, max_len_b=2, bos=BOS, eos=EOS)
    right = {b: [0, 0] for b in BUCKETS}
    for (src, tgt), hyp in zip(test, hyps):
        bucket = next(b for b in BUCKETS if b[0] <= len(src) <= b[1])
        right[bucket][0] += sum(int(a == b) for a, b in zip(hyp.tokens, tgt))
        right[bucket][1] += len(tgt)
    return [100.0 * r / n for r, n in right.values()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=300, help="Adam updates of 32 sequences per model")
    parser.add_argument("--hidden", type=int, default=32, help="encoder and decoder width: the size of the one fixed vector")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    torch.set_num_threads(1)
    vocab = Vocabulary([f"t{i}" for i in range(20)])
    data = encode(vocab, generate("copy", 20000, vocab_size=20, min_len=3, max_len=24, seed=args.seed))
    test = encode(vocab, generate("copy", 300, vocab_size=20, min_len=3, max_len=24, seed=args.seed + 1))
    print(f"correct target tokens (%) by source length, after {args.steps} updates, hidden {args.hidden}")
    print(f"{'decoder':>10}" + "".join(f"{f'{lo}-{hi}':>9}" for lo, hi in BUCKETS))
    result = {}
    for attention in ("none", "context", "luong"):
        acc = accuracy_by_length(train(attention, data, vocab, args.steps, args.hidden, args.seed), test)
        result[attention] = [round(a, 1) for a in acc]
        print(f"{attention:>10}" + "".join(f"{a:9.1f}" for a in acc), flush=True)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
