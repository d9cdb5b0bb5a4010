"""load_run packs float CPU models for oneDNN (attention.packed), and only those."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from attnkit.attention.packed import PackedLinear
from attnkit.families import load_run
from attnkit.families.translation.translate import translate


def packed_linears(model: torch.nn.Module) -> int:
    return sum(isinstance(m, PackedLinear) for m in model.modules())


def test_fp32_cpu_runs_load_packed_with_the_same_outputs(tiny_transformer_run: Path) -> None:
    packed, plain = load_run(tiny_transformer_run, "last"), load_run(tiny_transformer_run, "last", pack=False)
    assert packed_linears(packed.model) > 0 and packed_linears(plain.model) == 0
    assert packed.model.packed_cache is not None and plain.model.packed_cache is None
    assert list(packed.model.state_dict()) == list(plain.model.state_dict())
    lines = ["t1 t2 t3 t4", "t5 t6", "t9 t8 t7 t6 t5 t4 t3"]
    texts = [[t.text for t in nbest] for nbest in translate(packed.model, packed.vocabs, lines)]
    assert texts == [[t.text for t in nbest] for nbest in translate(plain.model, plain.vocabs, lines)]
    assert packed.model.packed_cache  # the tied output projection went through its packed copy


def test_int8_runs_are_not_packed(tiny_transformer_run: Path) -> None:
    assert packed_linears(load_run(tiny_transformer_run, "last", dtype=torch.qint8).model) == 0


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_cuda_runs_are_not_packed(tiny_transformer_run: Path) -> None:
    assert packed_linears(load_run(tiny_transformer_run, "last", device="cuda").model) == 0
