"""The long road equals transformers' eager `output_attentions` on tiny random decoders and encoders of every
architecture it covers (grouped-query attention, sliding windows causal and two-sided, soft-capping, learned and
rotary positions, bidirectional attention): exact rows, blocks, summaries, pooled maps with and without the sink,
rollout rows and the rows of generated tokens, all within 1e-5 in float32; and a model whose attention bypasses
the interface (BLOOM) is refused in one line."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from tiny_decoders import ARCHS, ENCODERS, eager_attentions, ids, model, transformers

from attnkit.analysis.rollout import rollout
from attnkit.errors import AttnkitError
from attnkit.sources.hf.load import HfModel
from attnkit.sources.hf.long.blocks import probabilities, row_blocks
from attnkit.sources.hf.long.capture import IMPLEMENTATION, capturing, register
from attnkit.sources.hf.long.export import forward, write_generation
from attnkit.sources.hf.long.rollout import RolloutStep, start
from attnkit.sources.hf.long.scan import exact_rows, scan_layer
from attnkit.sources.npz import npz_writer

N = 90  # tokens: more than Mistral's and Gemma 2's window (16), not a multiple of the pool sizes
N_ENCODER = 300  # an encoder's: a few hundred tokens, where eager still fits
POOLS = (8, 32)
WINDOW = 8
ROWS = [0, 17, N - 1]
ATOL = 1e-5


def _kept(name: str, x: torch.Tensor, **capture):
    register()
    with capturing(**capture) as cap, torch.inference_mode():
        out = model(name, IMPLEMENTATION)(input_ids=x)
    return cap.kept, out.logits


def _pooled(a: torch.Tensor, s: int) -> torch.Tensor:
    """Tile means of (H, N, N), straight from the definition."""
    t = -(-a.size(-1) // s)
    return torch.stack([torch.stack([a[:, i * s : (i + 1) * s, j * s : (j + 1) * s].mean(dim=(1, 2)) for j in range(t)], -1) for i in range(t)], 1)


def _without_sink(a: torch.Tensor) -> torch.Tensor:
    rest = a.clone()
    rest[..., 0] = 0
    total = rest.sum(-1, keepdim=True)
    return torch.where(total > 0, rest / total.clamp_min(1e-30), rest)


def _summaries(a: torch.Tensor, causal: bool) -> dict[str, torch.Tensor]:
    n = a.size(-1)
    back = (torch.arange(n)[:, None] - torch.arange(n)[None, :]).float()  # (N, N): q - k
    seen = back >= 0 if causal else torch.ones(n, n, dtype=torch.bool)  # (N, N): the keys a query may see
    return {"sink": a[..., 0], "entropy": -torch.special.xlogy(a, a).sum(-1), "distance": (a * back.abs() * seen).sum(-1),
            "local": (a * ((back.abs() < WINDOW) & seen)).sum(-1)}  # fmt: skip


@pytest.mark.parametrize("name", [*ARCHS, *ENCODERS])
def test_long_road_equals_eager(name):
    n = N if name in ARCHS else N_ENCODER
    chosen = [0, 17, n - 1]
    x = ids(n)
    reference = eager_attentions(name, x)  # per layer (H, N, N)
    kept, logits = _kept(name, x)
    with torch.inference_mode():
        eager_logits = model(name)(input_ids=x).logits
    torch.testing.assert_close(logits, eager_logits, atol=1e-4, rtol=1e-4)  # the kernel's own forward pass is unchanged
    assert sorted(kept) == list(range(1, len(reference) + 1))
    assert all(layer.causal == (name in ARCHS) for layer in kept.values())
    rows = start(chosen, n)
    for l in sorted(kept, reverse=True):
        a = reference[l - 1]
        step = RolloutStep(rows)
        scan = scan_layer(kept[l], WINDOW, POOLS, step)
        for key, expected in _summaries(a, kept[l].causal).items():
            scale = n if key == "distance" else 1  # in tokens: up to N times a probability's error
            torch.testing.assert_close(scan.summaries[key], expected, atol=ATOL * scale, rtol=0, msg=f"{name} layer {l} {key}")
        for s in POOLS:
            torch.testing.assert_close(scan.pooled[s], _pooled(a, s), atol=ATOL, rtol=0)
            torch.testing.assert_close(scan.pooled_without_sink[s], _pooled(_without_sink(a), s), atol=ATOL, rtol=0)
        torch.testing.assert_close(exact_rows(kept[l], chosen, None), a[:, chosen], atol=ATOL, rtol=0)
        torch.testing.assert_close(exact_rows(kept[l], chosen, [3, 1]), a[[3, 1]][:, chosen], atol=ATOL, rtol=0)
        block, lo = probabilities(kept[l], 40, 72)  # a block: queries 40..71 over the keys they see, lo..hi
        hi = lo + block.size(-1)
        torch.testing.assert_close(block, a[:, 40:72, lo:hi], atol=ATOL, rtol=0)
        assert a[:, 40:72, :lo].sum() + a[:, 40:72, hi:].sum() < ATOL  # the keys outside a block are masked
        rows = step.out
    torch.testing.assert_close(rows, rollout(reference)[chosen], atol=ATOL, rtol=0)


@pytest.mark.parametrize("name", ["mistral", "gemma2", "bert", "modernbert"])
def test_rows_only_keeps_the_chosen_queries(name):
    x = ids(N)
    reference = eager_attentions(name, x)
    kept, _ = _kept(name, x, layers=frozenset({2}), queries=torch.tensor(ROWS))
    assert list(kept) == [2] and kept[2].query.size(1) == len(ROWS)
    torch.testing.assert_close(exact_rows(kept[2], list(range(len(ROWS))), None), reference[1][:, ROWS], atol=ATOL, rtol=0)


@pytest.mark.parametrize("name", ["llama", "mistral", "gemma2", "gpt2"])
def test_generation_rows_equal_eager(name, tmp_path):
    x = ids(40)
    register()
    hf = HfModel(name, model(name, IMPLEMENTATION), None, None, "decoder", 512)
    with npz_writer(tmp_path / "g.npz") as writer:
        k = write_generation(writer, hf, x, None, 6)
    z = np.load(tmp_path / "g.npz")
    whole = torch.cat([x, torch.tensor([[int(t) for t in z["generated_tokens"]]])], dim=1)  # (1, 40 + k)
    reference = eager_attentions(name, whole)
    assert k >= 1 and len(z["generated_tokens"]) == k
    for l, a in enumerate(reference, 1):
        expected = a[:, 39 : 39 + k, : 39 + k]  # the rows that chose each new token
        torch.testing.assert_close(torch.from_numpy(z[f"generated/layer{l}"]), expected, atol=ATOL, rtol=0)


def test_eager_only_models_are_refused():
    register()
    config = transformers.BloomConfig(vocab_size=97, hidden_size=16, n_layer=2, n_head=4)
    bloom = HfModel("bloom", transformers.BloomForCausalLM._from_config(config, attn_implementation=IMPLEMENTATION).eval(), None, None, "decoder", None)
    with pytest.raises(AttnkitError, match="eager only"):
        forward(bloom, ids(20), None, None)


@pytest.mark.parametrize("name", ["llama", "mistral", "gemma2", "bert", "modernbert"])
def test_small_blocks_equal_one_block(name):
    """Blocks of a few rows each (a budget of 12 rows' logits: the rows per block grow as the rows see fewer keys, in
    a decoder and with a window) give the same scan and rollout step as one block of every row."""
    kept, _ = _kept(name, ids(N))
    layer = next((kept[l] for l in sorted(kept) if kept[l].window is not None), kept[1])  # the first windowed layer, if any
    budget = 12 * 4 * layer.heads * N
    sizes = [q1 - q0 for q0, q1 in row_blocks(layer, budget)]
    assert sum(sizes) == N and len(sizes) > 3
    assert max(sizes) > 12 if layer.causal or layer.window is not None else max(sizes) <= 12  # an encoder's full rows: at most 12
    steps = [RolloutStep(start(ROWS, N)) for _ in range(2)]
    small, whole = (scan_layer(layer, WINDOW, POOLS, st, budget=b) for st, b in zip(steps, (budget, 4 * layer.heads * N * N), strict=True))
    for key, values in whole.summaries.items():
        torch.testing.assert_close(small.summaries[key], values, atol=ATOL * (N if key == "distance" else 1), rtol=0)
    for s in POOLS:
        torch.testing.assert_close(small.pooled[s], whole.pooled[s], atol=ATOL, rtol=0)
        torch.testing.assert_close(small.pooled_without_sink[s], whole.pooled_without_sink[s], atol=ATOL, rtol=0)
    torch.testing.assert_close(steps[0].out, steps[1].out, atol=ATOL, rtol=0)
