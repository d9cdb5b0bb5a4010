"""`attnkit evaluate` of a translation run: translate a test set and score it against references."""

from __future__ import annotations

from pathlib import Path

from attnkit.artifacts.runs import LoadedRun
from attnkit.config.schema import Decode
from attnkit.data.text import read_parallel
from attnkit.families.translation.bleu import score_translations
from attnkit.families.translation.translate import translate


def evaluate_run(loaded: LoadedRun, src: str | Path, ref: str | Path, decode: Decode) -> dict:
    """BLEU (sacreBLEU, cased, detokenized), lowercased BLEU and chrF, with the settings used."""
    pairs = read_parallel(src, ref)
    results = translate(loaded.model, loaded.vocabs, [s for s, _ in pairs], decode, source=str(src))
    report = score_translations([nbest[0].text for nbest in results], [r for _, r in pairs])
    dtype = next(loaded.model.parameters()).dtype
    report.update(
        checkpoint=str(loaded.checkpoint),
        sentences=len(pairs),
        unfinished=sum(not nbest[0].finished for nbest in results),
        decode={
            "dtype": str(dtype).removeprefix("torch."),
            "beam": decode.beam,
            "alpha": decode.alpha,
            "max_len_a": decode.max_len_a,
            "max_len_b": decode.max_len_b,
        },  # fmt: skip
    )
    return report
