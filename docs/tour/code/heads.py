"""What the heads of a trained Transformer do (tour page 5; Vaswani et al. 2017, appendix figures).

Translates sentences with a run (`attnkit.families.translation.explore`, the same maps as
`attnkit plot`), then scores every self-attention head of the encoder and the decoder on three
patterns, averaged over all query tokens of all sentences:

- previous: the weight on the token just before the query;
- same word: the weight on the other SentencePiece pieces of the query's own word (over the
  queries inside words of several pieces);
- distance: the mean distance |i - j| in tokens between the query i and the keys j it attends to.

It prints the table, names the head that scores highest on each pattern and draws it on the
longest sentence whose translation finished within twice its length (one PNG each, under --out).

    .venv/bin/python docs/tour/code/heads.py RUN [--sentences 100] [--out plots/heads]
"""

from __future__ import annotations

import argparse
import gzip
import json
from pathlib import Path

import torch

from attnkit.config.schema import Decode
from attnkit.families import load_run
from attnkit.families.translation.explore import explore, word_groups
from attnkit.viz.heatmap import plot_attention

VALID = Path("../shared/data/multi30k/val.en.gz")
PATTERNS = ("previous", "same word", "distance")


def head_scores(w: torch.Tensor, pieces: list[str], offset: int) -> torch.Tensor:
    """w (H, T, T) of one sentence -> (H, 3) sums of the three patterns, and their counts (3,).

    `offset` is 1 for decoder self-attention, where row t's own input is column t and the token
    before it column t - 1 (columns are <s> + outputs), and 0 for the encoder (rows = columns).
    """
    T = w.size(-1)
    rows = torch.arange(T)
    prev = w[:, rows[1:], rows[1:] - 1].sum(-1)  # (H,) weight on the previous token
    same_word, n_same = torch.zeros(w.size(0)), 0
    for group in word_groups(pieces[:T]) if offset == 0 else []:
        for i in group if len(group) > 1 else []:
            others = [j for j in group if j != i]
            same_word += w[:, i, others].sum(-1)  # (H,)
            n_same += 1
    distance = (w * (rows[:, None] - rows[None, :]).abs()).sum(-1).sum(-1)  # (H,) sum over queries
    return torch.stack([prev, same_word, distance], dim=1), torch.tensor([T - 1, n_same, T])  # (H, 3), (3,)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run", help="a translation run folder (a Transformer)")
    parser.add_argument("--sentences", type=int, default=100, help="the first N sentences of Multi30k's val.en")
    parser.add_argument("--out", default="plots/heads", help="folder for the PNGs")
    args = parser.parse_args()
    loaded = load_run(args.run)
    with gzip.open(VALID, "rt", encoding="utf-8") as f:
        lines = [next(f).strip() for _ in range(args.sentences)]
    explored = explore(loaded, lines, Decode(beam=1, nbest=1))
    totals: dict[str, list] = {}
    for e in explored:
        for view in e.views:
            if view.kind in ("encoder", "decoder_self"):
                for layer, w in enumerate(view.layers):  # w (H, T, T)
                    sums, counts = head_scores(w, view.rows, 0 if view.kind == "encoder" else 1)
                    acc = totals.setdefault(f"{view.kind} {layer + 1}", [torch.zeros_like(sums), torch.zeros(3)])
                    acc[0] += sums
                    acc[1] += counts
    print(f"{'attention layer':>16} {'head':>4}" + "".join(f"{p:>11}" for p in PATTERNS))
    best = {p: (-1.0, "", 0) for p in PATTERNS}
    for name, (sums, counts) in totals.items():
        means = sums / counts.clamp(min=1)  # (H, 3)
        for h, row in enumerate(means.tolist()):
            print(f"{name:>16} {h + 1:4d}" + "".join(f"{v:11.3f}" for v in row))
            for p, v in zip(PATTERNS, row):
                if v > best[p][0] and not (p == "same word" and name.startswith("decoder")):
                    best[p] = (v, name, h)
    finished = [e for e in explored if e.nbest[0].finished and len(e.nbest[0].tgt_pieces) <= 2 * len(e.nbest[0].src_pieces)] or explored
    longest = max(finished, key=lambda e: len(e.nbest[0].src_pieces))  # the longest sentence with a translation of sane length
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    summary = {}
    for p, (v, name, h) in best.items():
        kind, layer = name.split()
        view = next(v for v in longest.views if v.kind == kind)
        png = out / f"{p.replace(' ', '-')}.png"
        plot_attention(view.layers[int(layer) - 1][h], view.cols, view.rows, png, title=f"{p}: {kind} layer {layer} head {h + 1}",
                       xlabel="keys", ylabel="queries")  # fmt: skip
        summary[p] = {"kind": kind, "layer": int(layer), "head": h + 1, "score": round(v, 3), "png": str(png)}
        print(f"most '{p}' head: {kind} layer {layer} head {h + 1} ({v:.3f}) -> {png}")
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
