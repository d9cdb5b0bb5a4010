"""Attention over images, by hand (tour page 7). Two sub-commands:

    .venv/bin/python docs/tour/code/images.py spatial   # soft attention over the cells of a feature map
    .venv/bin/python docs/tour/code/images.py conv      # the SAGAN block: identity at start, then attention

`SpatialAttention` (Xu et al. 2015) and `ConvSelfAttention` (Zhang et al. 2019) are attnkit's.
"""

from __future__ import annotations

import argparse

import torch

from attnkit.attention import ConvSelfAttention, SpatialAttention, unflatten_weights


def spatial() -> None:
    """A decoder state attends over a 3 x 3 grid; the weights map back onto the grid."""
    torch.manual_seed(0)
    attn = SpatialAttention(query_dim=8, feature_dim=16, attn_dim=8)
    features = torch.randn(1, 3, 3, 16)  # (B, gh, gw, C) channels-last CNN map
    features[0, 1, 2] *= 4.0  # one salient cell: row 2, column 3
    context, weights = attn(torch.randn(1, 1, 8), features)  # (B, 1, C), (B, 1, P)
    torch.set_printoptions(precision=3, sci_mode=False)
    print("alpha over the 9 cells, as the grid:\n", unflatten_weights(weights, 3, 3)[0, 0])
    print(f"sum {weights.sum():.4f}; z_t = sum_i alpha_i a_i: max |z - alpha @ a| = {(context - weights @ features.reshape(1, 9, 16)).abs().max():.1e}")


def conv() -> None:
    """gamma = 0: the block is the identity; with gamma = 1 each position mixes in what it attends to."""
    torch.manual_seed(0)
    block = ConvSelfAttention(channels=16)
    x = torch.randn(1, 16, 4, 4)  # (B, C, gh, gw)
    y, beta = block(x)  # (B, C, gh, gw), (B, P, P)
    print(
        "beta",
        tuple(beta.shape),
        f"rows sum to 1: {torch.allclose(beta.sum(-1), torch.ones(1, 16))}",
        f"; gamma = {block.gamma.item()}, y == x: {torch.equal(y, x)}",
    )
    with torch.no_grad():
        block.gamma.fill_(1.0)
    y, beta = block(x)
    print(f"gamma = 1: |y - x| = {(y - x).norm():.3f}; where position (0, 0) looks (4 x 4):")
    torch.set_printoptions(precision=3, sci_mode=False)
    print(beta[0, 0].reshape(4, 4).detach())


def main() -> None:
    commands = {"spatial": spatial, "conv": conv}
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("what", choices=commands)
    commands[parser.parse_args().what]()


if __name__ == "__main__":
    main()
