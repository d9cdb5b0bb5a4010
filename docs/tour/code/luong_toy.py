"""The classic Luong-attention toy (tour page 3): four English-German pairs sharing the word "love".

Embedding size 4, a one-layer LSTM encoder and decoder (16 units), the dot score h_t^T h_s, the
attentional layer tanh(W_c [c_t; h_t]) and teacher forcing 0.7: all of it is attnkit's own
`RNNSeq2Seq(attention="luong", score="dot")`, trained on the four pairs with a plain Adam loop.
Four pairs are very little data, and which source word one such model attends to depends on its
initialisation, so the script trains it once per seed. It prints, for each seed, the word that
each step emitting "liebe" attends to most, then the mean attention of those steps on each source
word over all seeds, and the attention of the first pair, averaged over the seeds.

    .venv/bin/python docs/tour/code/luong_toy.py [--seeds 10] [--steps 300] [--png FILE]
"""

from __future__ import annotations

import argparse
from collections import defaultdict

import torch

from attnkit.data.batching import collate
from attnkit.data.vocab import Vocabulary
from attnkit.families.translation.rnn import RNNSeq2Seq
from attnkit.models.losses import label_smoothed_nll

PAIRS = [
    ("i love you", "ich liebe dich"),
    ("i love her", "ich liebe sie"),
    ("i see you", "ich sehe dich"),
    ("love is blind", "liebe ist blind"),
]
SRC = Vocabulary(sorted({w for s, _ in PAIRS for w in s.split()}))
TGT = Vocabulary(sorted({w for _, t in PAIRS for w in t.split()}))


def train(seed: int, steps: int) -> torch.Tensor:
    """Train one toy model; its teacher-forced attention (B, T, S) over the four pairs."""
    torch.manual_seed(seed)
    batch = collate([(SRC.encode(s.split()), TGT.encode(t.split())) for s, t in PAIRS], range(len(PAIRS)))
    model = RNNSeq2Seq(src_vocab_size=len(SRC), tgt_vocab_size=len(TGT), attention="luong", score="dot", input_feed=False,
                       embed_dim=4, hidden=16, layers=1, bidirectional=False, dropout=0.0, share_embeddings=False)  # fmt: skip
    optimizer = torch.optim.Adam(model.parameters(), lr=0.05)
    for _ in range(steps):
        features = model.features(batch.src, batch.src_keep, batch.tgt_in, teacher_forcing=0.7)  # (B, T, H)
        loss, _ = label_smoothed_nll(features[batch.tgt_keep], batch.tgt_out[batch.tgt_keep], weight=model.output_weight, epsilon=0.0)
        optimizer.zero_grad()
        (loss / batch.n_tgt_tokens).backward()
        optimizer.step()
    model.eval()
    with torch.no_grad():
        return model.attentions(batch.src, batch.src_keep, batch.tgt_in).cross[0][:, 0]  # (B, T, S)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=10, help="train one model per seed 0 .. N-1")
    parser.add_argument("--steps", type=int, default=300, help="Adam updates on the four pairs")
    parser.add_argument("--png", help="draw the first pair's attention, averaged over the seeds")
    args = parser.parse_args()
    torch.set_num_threads(1)
    liebe = [(i, t) for i, (_, tgt) in enumerate(PAIRS) for t, w in enumerate(tgt.split()) if w == "liebe"]
    on_word, runs = defaultdict(list), []
    for seed in range(args.seeds):
        weights = train(seed, args.steps)  # (B, T, S)
        runs.append(weights)
        picked = []
        for i, t in liebe:
            cols = PAIRS[i][0].split() + ["</s>"]
            row = weights[i, t, : len(cols)].tolist()
            for word, w in zip(cols, row):
                on_word[word].append(w)
            picked.append(f"{cols[row.index(max(row))]} ({max(row):.2f})")
        print(f"seed {seed}: the steps that emit 'liebe' attend most to " + ", ".join(picked), flush=True)
    means = sorted(((sum(v) / len(v), word) for word, v in on_word.items()), reverse=True)
    print(f"\nmean attention of the 'liebe' steps over {args.seeds} seeds: " + ", ".join(f"{word} {m:.2f}" for m, word in means))
    print(f"'liebe' attends most to '{means[0][1]}'")
    mean = torch.stack(runs).mean(0)  # (B, T, S)
    cols, rows = PAIRS[0][0].split() + ["</s>"], PAIRS[0][1].split() + ["</s>"]
    print(f"\n{PAIRS[0][0]} -> {PAIRS[0][1]}, mean over the seeds")
    print(" " * 8 + "".join(f"{c:>7}" for c in cols))
    for t, row in enumerate(rows):
        print(f"{row:>8}" + "".join(f"{w:7.2f}" for w in mean[0, t, : len(cols)].tolist()))
    if args.png:
        from attnkit.viz.heatmap import plot_attention

        plot_attention(mean[0, : len(rows), : len(cols)], cols, rows, args.png, title=f"Luong dot attention, mean of {args.seeds} seeds")
        print(f"wrote {args.png}")


if __name__ == "__main__":
    main()
