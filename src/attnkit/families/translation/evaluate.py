"""`attnkit evaluate` of a translation run: translate a test set and score it against references."""

from __future__ import annotations

from pathlib import Path

from attnkit.artifacts.runs import LoadedRun
from attnkit.config.schema import Decode
from attnkit.data.text import read_parallel
from attnkit.families.translation.bleu import score_translations
from attnkit.families.translation.translate import translate_run
from attnkit.progress import counter


def evaluate_run(loaded: LoadedRun, src: str | Path, ref: str | Path, decode: Decode) -> dict:
    """BLEU (sacreBLEU, cased, detokenized), lowercased BLEU and chrF, with the settings used."""
    pairs = read_parallel(src, ref)
    with counter(len(pairs), "evaluating", unit="sent") as bar:
        results = translate_run(loaded, [s for s, _ in pairs], decode, source=str(src), progress=bar.update)
    report = score_translations([nbest[0].text for nbest in results], [r for _, r in pairs])
    engine = loaded.engine
    dtype = engine.compute_type if engine is not None else str(next(loaded.model.parameters()).dtype).removeprefix("torch.")
    report.update(
        checkpoint=str(loaded.checkpoint),
        sentences=len(pairs),
        unfinished=sum(not nbest[0].finished for nbest in results),
        decode={
            "engine": "attnkit" if engine is None else engine.name,
            "dtype": dtype,
            "beam": decode.beam,
            "alpha": decode.alpha,
            "max_len_a": decode.max_len_a,
            "max_len_b": decode.max_len_b,
        },  # fmt: skip
    )
    return report
