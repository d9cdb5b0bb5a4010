"""benchmarks/long_context.py's pieces that need no inseq: the weights' hash that ties inseq's model to the others', and
the inseq way's estimate."""

from __future__ import annotations

import hashlib

import numpy as np
import torch

from benchmark_scripts import load_benchmark

long_context = load_benchmark("long_context")


def test_the_weights_hash_is_sha256_of_the_names_and_bytes_in_name_order() -> None:
    layer = torch.nn.Linear(2, 1)
    with torch.no_grad():
        layer.weight.copy_(torch.tensor([[1.0, 2.0]]))
        layer.bias.copy_(torch.tensor([3.0]))
    by_hand = hashlib.sha256(b"bias" + np.float32([3]).tobytes() + b"weight" + np.float32([1, 2]).tobytes()).hexdigest()
    assert long_context.weights_hash(layer) == by_hand


def test_the_tiny_llama_has_the_same_weights_at_any_length_and_one_ulp_changes_the_hash() -> None:
    # Rotary positions: the length changes no weight, so inseq's child may build it at its own length.
    model = long_context._model(64, "eager")
    digest = long_context.weights_hash(model)
    assert long_context.weights_hash(long_context._model(1024, "sdpa")) == digest
    with torch.no_grad():
        weight = model.model.norm.weight  # (128,)
        weight[0] = torch.nextafter(weight[0], torch.tensor(2.0))
    assert long_context.weights_hash(model) != digest


def test_the_inseq_estimate_holds_every_map_three_times() -> None:
    n = 4096
    maps = 4 * 4 * n * n * 4 / 2**20  # L x H x N x N float32, MiB
    once = long_context.estimate("output_attentions", n)["memory_mib"]
    assert long_context.estimate("inseq", n) == {"memory_mib": round(once + 2 * maps, 1), "disk_mib": 0.0}


def test_every_way_reads_the_same_ids() -> None:
    ids = long_context.token_ids(300)  # (1, 300)
    assert ids.shape == (1, 300) and int(ids.min()) >= 3 and int(ids.max()) < 512
    assert torch.equal(long_context.token_ids(300), ids)
