"""What `attnkit demo` trains and shows for the translation family.

`setup` picks `m30k-small` on Multi30k En->De (data from --data, data/multi30k,
../shared/data/multi30k, or downloaded) or, with no Multi30k reachable, `toy-reverse` (look for the
anti-diagonal); `showcase` translates the test set, prints three samples and the test BLEU, and
writes a cross-attention heatmap.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from attnkit.artifacts.runs import LoadedRun
from attnkit.data.fetch import fetch_multi30k
from attnkit.errors import AttnkitError
from attnkit.evaluate.bleu import score_translations
from attnkit.families.translation.config import TranslationRun
from attnkit.families.translation.corpus import corpus_splits, multi30k_dir, split_pairs
from attnkit.families.translation.translate import translate
from attnkit.viz.heatmap import plot_attention

PRESET, FALLBACK = "m30k-small", "toy-reverse"


def _find_multi30k(run: TranslationRun, data_dir: str | None) -> Path | None:
    try:
        return multi30k_dir(run.data, data_dir)
    except AttnkitError:
        pass
    if data_dir:
        return None
    try:
        print("Multi30k not found locally; downloading it to data/multi30k ...")
        fetch_multi30k("data/multi30k", langs=("en", "de"))
        return Path("data/multi30k")
    except AttnkitError as e:
        print(f"could not download Multi30k ({e})")
        return None


def setup(load: Callable[[str, list[str]], TranslationRun], minutes: float, data_dir: str | None) -> tuple[TranslationRun, str | None]:
    """The run to train (`load(preset, overrides)` reads a preset) and the data folder it reads."""
    folder = _find_multi30k(load(PRESET, []), data_dir)
    if folder is None:
        print("No Multi30k data reachable: training the built-in reverse task instead.")
        return load(FALLBACK, [f"train.max_minutes={minutes}"]), None
    print(f"Training {PRESET} on Multi30k En->De from {folder} for {minutes:g} minutes.")
    overrides = [f"train.max_minutes={minutes}", f"data.dir={folder}", "train.eval_max_sentences=200"]
    return load(PRESET, overrides), str(folder)


def showcase(loaded: LoadedRun, data_dir: str | None, out_dir: Path) -> None:
    """Translate the test split; print samples and BLEU; write the heatmap of the first sentence."""
    pairs = split_pairs(corpus_splits(loaded.run.data, data_dir)["test"])
    src, ref = [s for s, _ in pairs], [t for _, t in pairs]
    decode = loaded.run.decode
    results = translate(loaded.model, loaded.vocabs, src, decode, return_attention=True)
    print("\nSample translations (test set):")
    for i in range(3):
        print(f"  src: {src[i]}\n  out: {results[i][0].text}\n  ref: {ref[i]}\n")
    scores = score_translations([r[0].text for r in results], ref)
    print(f"Test BLEU (beam {decode.beam}): {scores['bleu']:.2f}  [{scores['bleu_signature']}]")
    best = results[0][0]
    png = plot_attention(best.attention, best.src_pieces, best.tgt_pieces, out_dir / "attention.png", title="cross-attention (last layer, mean over heads)")
    print(f"Cross-attention heatmap: {png}")
    if data_dir is not None:
        print(f"Full-quality model (40 minutes): attnkit train configs/{PRESET}.yaml --out runs/m30k")
