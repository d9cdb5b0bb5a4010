"""Why a CNN needs self-attention to relate distant positions (SAGAN's block, Zhang et al. 2019,
Sec. 3), shown on generated images: "are the two shapes the same colour?" with the shapes in
opposite corners of a 48 x 48 image (attnkit.families.captioning.shapes.same_colour_pairs).

The small CNN is three 3x3 stride-2 convolutions (receptive field 15 px, the shapes 32 px apart),
a 1x1 convolution + ReLU, mean pooling and a linear classifier. Without a block no unit sees both
shapes, and mean pooling of per-position features cannot tell "two of one colour" from "one each"
(g(a) + g(b) > t for a = b and < t for a != b has no solution). The same CNN with one
`ConvSelfAttention` block before the 1x1 convolution lets each position read the other shape.
Prints one JSON line (accuracy of both, seeds, time) and draws where a query position (the centre
of the first shape) attends: benchmarks/results/conv_self_attention.png.

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/conv_self_attention.py
"""

from __future__ import annotations

import argparse
import json
import random
import time
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from attnkit.attention.conv_block import ConvSelfAttention
from attnkit.families.captioning.figure import upsample
from attnkit.families.captioning.images import to_tensor
from attnkit.families.captioning.shapes import draw, place_cells, same_colour_pairs
from attnkit.viz.heatmap import pyplot


class SameColourNet(nn.Module):
    """Three stride-2 3x3 convolutions [+ one SAGAN block], 1x1 conv + ReLU, mean pool, linear."""

    def __init__(self, attention: bool, channels: int = 64) -> None:
        super().__init__()
        layers, c_in = [], 3
        for _ in range(3):
            layers += [nn.Conv2d(c_in, channels, 3, stride=2, padding=1), nn.ReLU()]
            c_in = channels
        self.cnn = nn.Sequential(*layers)
        self.block = ConvSelfAttention(channels) if attention else None
        self.mix = nn.Conv2d(channels, channels, 1)
        self.out = nn.Linear(channels, 2)

    def forward(self, images: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor | None]:
        x = self.cnn(images)  # (B, C, 6, 6)
        weights = None
        if self.block is not None:
            x, weights = self.block(x)  # (B, C, 6, 6), (B, P, P)
        x = F.relu(self.mix(x)).mean(dim=(2, 3))  # (B, C)
        return self.out(x), weights  # (B, 2)


def data(n: int, seed: int) -> tuple[torch.Tensor, torch.Tensor, list]:
    pairs = same_colour_pairs(random.Random(seed), n)
    images = torch.stack([to_tensor(draw(scene), (127.0,) * 3, (128.0,) * 3) for scene, _ in pairs])  # (N, 3, 48, 48)
    return images, torch.tensor([label for _, label in pairs]), [scene for scene, _ in pairs]


def train(attention: bool, train_set, test_set, steps: int, seed: int) -> tuple[float, SameColourNet]:
    torch.manual_seed(seed)
    model = SameColourNet(attention)
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
    x, y = train_set[:2]
    g = torch.Generator().manual_seed(seed)
    for _ in range(steps):
        index = torch.randint(0, len(y), (64,), generator=g)
        loss = F.cross_entropy(model(x[index])[0], y[index])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    model.eval()
    with torch.inference_mode():
        accuracy = (model(test_set[0])[0].argmax(-1) == test_set[1]).float().mean().item()
    return accuracy, model


def picture(model: SameColourNet, test_set, out: Path, count: int = 4) -> float:
    """Where the centre cell of the first shape attends, on `count` test images; returns the mean
    attention mass that queries put on the other shape's cells over the whole test set."""
    images, _, scenes = test_set
    with torch.inference_mode():
        _, weights = model(images)  # (N, P, P)
    masses = []
    for n, scene in enumerate(scenes):
        first, second = scene.objects
        query = place_cells(first, 6)[0]
        masses.append(float(weights[n, query, place_cells(second, 6)].sum()))
    plt = pyplot()
    fig, axes = plt.subplots(1, count, figsize=(2.2 * count, 2.4))
    for n, ax in enumerate(axes):
        first = scenes[n].objects[0]
        query = place_cells(first, 6)[0]
        ax.imshow(np.asarray(draw(scenes[n])))
        ax.imshow(upsample(weights[n, query].tolist(), 6, 48), cmap="gray", alpha=0.6, vmin=0, vmax=1)
        r, c = divmod(query, 6)
        ax.add_patch(plt.Rectangle((c * 8, r * 8), 8, 8, fill=False, edgecolor="magenta", linewidth=2))
        ax.set_title("same" if scenes[n].objects[0].colour == scenes[n].objects[1].colour else "different", fontsize=9)
        ax.axis("off")
    fig.suptitle("where the query cell (magenta) attends", fontsize=9)
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=90)
    return sum(masses) / len(masses)


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--train", type=int, default=3000)
    p.add_argument("--test", type=int, default=500)
    p.add_argument("--steps", type=int, default=1200)
    p.add_argument("--seeds", type=int, nargs="+", default=[1])
    p.add_argument("--png", default="benchmarks/results/conv_self_attention.png")
    args = p.parse_args()
    torch.set_num_threads(1)
    start = time.monotonic()
    train_set, test_set = data(args.train, 0), data(args.test, 1)
    result = {"task": "same colour? (two shapes in opposite corners, 48x48)", "train": args.train, "test": args.test, "steps": args.steps}
    for attention in (False, True):
        accuracies, model = [], None
        for seed in args.seeds:
            accuracy, model = train(attention, train_set, test_set, args.steps, seed)
            accuracies.append(round(100 * accuracy, 1))
        name = "cnn_self_attention" if attention else "cnn"
        result[name] = {"accuracy": accuracies, "mean": round(sum(accuracies) / len(accuracies), 1)}
        if attention:
            result[name]["mass_on_other_shape"] = round(picture(model, test_set, Path(args.png)), 3)
    result["seconds"] = round(time.monotonic() - start, 1)
    result["threads"] = 1
    print(json.dumps(result))


if __name__ == "__main__":
    main()
