"""The Transformer block and its training recipe, measured (tour page 5). One sub-command each:

    .venv/bin/python docs/tour/code/transformer.py norms       # post-norm (as published) and pre-norm
    .venv/bin/python docs/tour/code/transformer.py schedule    # the Noam learning rate (eq. 3)
    .venv/bin/python docs/tour/code/transformer.py smoothing   # label smoothing, eps = 0.1

The layers, the schedule and the loss are attnkit's (`attnkit.models.transformer.EncoderLayer`,
`attnkit.train.schedules.noam`, `attnkit.models.losses.label_smoothed_nll`).
"""

from __future__ import annotations

import argparse

import torch

from attnkit.models.losses import label_smoothed_nll
from attnkit.models.transformer import EncoderLayer
from attnkit.train.schedules import noam


def norms() -> None:
    """Residual stream size and gradient per layer of a freshly initialised 12-layer encoder."""
    print(f"{'layer':>5} {'post: std(x)':>13} {'grad':>8}   {'pre: std(x)':>12} {'grad':>8}")
    columns = []
    for pre_norm in (False, True):
        torch.manual_seed(0)
        layers = [EncoderLayer(64, 4, 256, dropout=0.0, attention_dropout=0.0, pre_norm=pre_norm) for _ in range(12)]
        final = torch.nn.LayerNorm(64) if pre_norm else torch.nn.Identity()  # pre-norm ends with one LayerNorm
        x = torch.randn(8, 20, 64)  # (B, S, D)
        target = torch.randn(8, 20, 64)  # (B, S, D) a fixed random regression target
        keep = torch.ones(8, 1, 1, 20, dtype=torch.bool)  # (B, 1, 1, S)
        stds = []
        for layer in layers:
            x, _ = layer(x, keep)  # (B, S, D)
            stds.append(x.std().item())
        (final(x) - target).pow(2).mean().backward()
        columns.append((stds, [layer.ffn.w_1.weight.grad.norm().item() for layer in layers]))
    for i in range(12):
        (s_post, g_post), (s_pre, g_pre) = (columns[0][0][i], columns[0][1][i]), (columns[1][0][i], columns[1][1][i])
        print(f"{i + 1:5d} {s_post:13.2f} {g_post:8.4f}   {s_pre:12.2f} {g_pre:8.4f}")
    print("post-norm: LayerNorm(x + F(x)) after every sub-layer keeps std(x) at 1")
    print("pre-norm: x + F(LayerNorm(x)) adds to the residual stream, which grows with depth; one LayerNorm at the end")


def schedule() -> None:
    """lrate = d_model^-0.5 * min(step^-0.5, step * warmup^-1.5), d_model 512, warmup 4000 (the paper)."""
    for step in (1, 1000, 2000, 4000, 8000, 16000, 100000):
        print(f"step {step:6d}: lr {noam(step, d_model=512, warmup=4000):.2e}")
    print(f"peak at step 4000 = (512 * 4000)^-0.5 = {(512 * 4000) ** -0.5:.2e}")


def smoothing() -> None:
    """With eps = 0.1 over V = 5 classes the loss is lowest at q' = 0.9 one-hot + 0.02, not at one-hot."""
    gold = torch.tensor([2])
    q_smooth = torch.full((1, 5), 0.1 / 5)
    q_smooth[0, 2] += 0.9  # q' = (1 - eps) one-hot + eps / V
    for name, p in (("p = one-hot (0.996)", torch.softmax(torch.tensor([[0.0, 0.0, 7.0, 0.0, 0.0]]), -1)), ("p = q'", q_smooth),
                    ("p = uniform", torch.full((1, 5), 0.2))):  # fmt: skip
        loss, nll = label_smoothed_nll(p.log(), gold, epsilon=0.1, ignore_index=-1)
        print(f"{name:>20}: smoothed loss {loss.item():.4f}   nll {nll.item():.4f}   p(gold) {p[0, 2]:.3f}")
    print("the smoothed loss is lowest at p = q': the model is trained to stay a little unsure (better BLEU, worse perplexity)")


def main() -> None:
    commands = {"norms": norms, "schedule": schedule, "smoothing": smoothing}
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("what", choices=commands)
    commands[parser.parse_args().what]()


if __name__ == "__main__":
    main()
