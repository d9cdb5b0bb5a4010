"""`attnkit evaluate`: translate a test set with a run and score it against references."""

from __future__ import annotations

from pathlib import Path

import torch

from attnkit.data.text import read_parallel
from attnkit.decode.translate import SearchSettings, translate
from attnkit.evaluate.bleu import score_translations
from attnkit.runs import load_run


def evaluate_run(
    run_dir: str | Path,
    src: str | Path,
    ref: str | Path,
    *,
    beam: int | None = None,
    alpha: float | None = None,
    checkpoint: str = "best",
    batch_size: int = 64,
    dtype: torch.dtype | None = None,
    workers: int | None = None,
) -> dict:
    """BLEU (sacreBLEU, cased, detokenized), lowercased BLEU and chrF, with the settings used."""
    pairs = read_parallel(src, ref)
    loaded = load_run(run_dir, checkpoint, dtype=dtype, task="translation")
    d = loaded.run.decode
    settings = SearchSettings(beam=beam or d.beam, alpha=d.alpha if alpha is None else alpha, max_len_a=d.max_len_a,
                              max_len_b=d.max_len_b, batch_size=batch_size, workers=workers)  # fmt: skip
    results = translate(loaded.model, loaded.vocabs, [s for s, _ in pairs], settings, source=str(src))
    report = score_translations([nbest[0].text for nbest in results], [r for _, r in pairs])
    report.update(
        checkpoint=str(loaded.checkpoint),
        sentences=len(pairs),
        unfinished=sum(not nbest[0].finished for nbest in results),
        decode={"dtype": str(dtype or torch.float32).removeprefix("torch."), "beam": settings.beam, "alpha": settings.alpha, "max_len_a": settings.max_len_a, "max_len_b": settings.max_len_b},
    )
    return report
