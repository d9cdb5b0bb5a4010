"""`translate` with parallel CPU batches (`Decode.workers`) returns what one-at-a-time does."""

from __future__ import annotations

import pytest
import torch

from attnkit.config.schema import Decode
from attnkit.families import load_run
from attnkit.families.translation.translate import translate

LINES = ["a b c", "d e", "f g h i j", "b", "c c d", "e f g h", "i j a b c d e", "h g"] * 3


@pytest.mark.parametrize("beam", [1, 3])
def test_parallel_batches_equal_one_at_a_time(tiny_transformer_run, beam: int) -> None:
    loaded = load_run(tiny_transformer_run, "best")
    settings = Decode(beam=beam, nbest=beam, batch_size=4, workers=1)
    threads = torch.get_num_threads()
    sequential = translate(loaded.model, loaded.vocabs, LINES, settings)
    done: list[int] = []
    parallel = translate(loaded.model, loaded.vocabs, LINES, settings.with_overrides(workers=3), progress=done.append)
    assert torch.get_num_threads() == threads  # the intra-op thread count is restored
    assert sorted(done) == [4] * 6  # every batch reported once
    for one, many in zip(sequential, parallel, strict=True):
        assert [t.text for t in one] == [t.text for t in many]
        assert [t.score for t in one] == pytest.approx([t.score for t in many], abs=1e-5)
