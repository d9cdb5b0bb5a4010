"""The memory guard's terms against byte counts made by hand from what the forward pass allocates (the live
tensors at its peak, read off torch's profiler on the tiny Llama of benchmarks/long_context.py), and the spilled
road (kept queries and keys in files, read back a layer at a time) against the in-memory one: the same npz, exactly."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from tiny_decoders import ids, model, transformers

from attnkit.sources.hf.load import HfModel
from attnkit.sources.hf.long.blocks import BLOCK_BYTES, KeptLayer
from attnkit.sources.hf.long.budget import Plan, estimate, shape_of
from attnkit.sources.hf.long.capture import IMPLEMENTATION, register
from attnkit.sources.hf.long.export import write_ids
from attnkit.sources.hf.long.options import LongOptions
from attnkit.sources.hf.long.spill import Spilled
from attnkit.sources.npz import npz_writer

# benchmarks/long_context.py's tiny Llama: 4 layers, 4 query and 2 key/value heads of 32, hidden 128, intermediate 256
CONFIG = {"hidden_size": 128, "num_hidden_layers": 4, "num_attention_heads": 4, "num_key_value_heads": 2, "intermediate_size": 256,
          "vocab_size": 512}  # fmt: skip


def test_terms_are_hand_counts():
    llama = transformers.LlamaForCausalLM._from_config(transformers.LlamaConfig(**CONFIG))
    shape = shape_of(llama)
    n = 2048
    weights = 4 * (2 * 512 * 128 + 4 * (2 * 128 * 128 + 2 * 128 * 64 + 3 * 128 * 256 + 2 * 128) + 128)  # embeddings, lm head, layers, norms
    assert (shape.weights, shape.vocab, shape.head_dim) == (weights, 512, 32)
    # at the MLP's product: the embeddings, the layer's input, its residual and normed input (4 x 128), the gate's SiLU,
    # the up projection and the product (3 x 256), and the rotary cos and sin (2 x 32), float32, per token
    per_token = 4 * 128 + 3 * 256 + 2 * 32
    est = estimate(shape, n, Plan(layers=4, rows=1, row_heads=4))
    assert est.activations == n * 4 * per_token + 4 * 512  # and the last position's logits
    assert est.kept == 4 * (4 + 2) * n * 32 * 4  # every layer's queries (H, N, D) and keys (Hkv, N, D)
    results = 4 * (4 * n + 2 * ((n // 64) ** 2 + (n // 256) ** 2 + (n // 1024) ** 2)) * 4 + 2 * n * 4  # summaries, pooled maps, rollout
    assert est.work == 4 * BLOCK_BYTES + 4 * n * 4 + results  # logits, rows, the entropy's product, copies; the exact row
    assert est.memory == weights + est.kept + max(est.activations, est.work)  # the scans come after the forward pass
    spilled = estimate(shape, n, Plan(layers=4, rows=1, row_heads=4), spill=True)
    assert (spilled.kept, spilled.spilled) == (est.kept // 4, est.kept)


def test_spilled_layers_round_trip_their_bytes(tmp_path):
    layer = KeptLayer(torch.randn(4, 9, 8).to(torch.bfloat16), torch.randn(2, 9, 8).to(torch.bfloat16), 0.5, window=4, softcap=30.0)
    kept = Spilled(tmp_path)
    kept[3] = layer
    back = kept[3]
    assert torch.equal(back.query, layer.query) and torch.equal(back.key, layer.key) and back.query.dtype == torch.bfloat16
    assert (back.scaling, back.window, back.softcap) == (0.5, 4, 30.0) and list(kept) == [3]
    del kept[3]
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize("name", ["llama", "gemma2"])
def test_spilled_road_equals_in_memory(name, tmp_path):
    register()
    hf = HfModel(name, model(name, IMPLEMENTATION), None, None, "decoder", 512)
    x = ids(70)
    options = LongOptions(rows=("-1", "5:9"))
    with npz_writer(tmp_path / "memory.npz") as writer:
        in_memory = write_ids(hf, x, [str(i) for i in range(70)], writer, options)
    budget = in_memory["estimate"]["memory_bytes"] - 1  # the kept queries and keys no longer fit in memory
    with npz_writer(tmp_path / "spilled.npz") as writer:
        spilled = write_ids(hf, x, [str(i) for i in range(70)], writer, LongOptions(rows=options.rows, max_memory=budget))
    assert in_memory["estimate"]["spilled_bytes"] == 0 and spilled["estimate"]["spilled_bytes"] > 0
    a, b = np.load(tmp_path / "memory.npz"), np.load(tmp_path / "spilled.npz")
    assert sorted(a.files) == sorted(b.files) and len(a.files) > 20
    for key in a.files:
        np.testing.assert_array_equal(a[key], b[key], err_msg=key)
