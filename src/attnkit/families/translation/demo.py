"""What `attnkit demo` trains and shows for the translation family.

`setup` picks `rnn-luong-m30k` (Luong et al. 2015: a bi-LSTM encoder, an LSTM decoder with global
attention and input feeding) on Multi30k En->De (data from --data, data/multi30k,
../shared/data/multi30k, or downloaded) or, with no Multi30k reachable, `toy-reverse` (look for the
anti-diagonal). Of the presets it is the one that translates soonest: with a 4k BPE, 25.2
validation BLEU after 300 updates, where the Transformer preset has 3.2 (README, "The demo").
`showcase` translates the test set (beam 5), prints three samples and the test BLEU, writes a
cross-attention heatmap and, through the `report` it is given (the core's one road to a page,
`attnkit.demo`), an offline HTML report of a few sentences, and prints the command that serves the
run in a browser.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from attnkit.artifacts.runs import LoadedRun
from attnkit.errors import AttnkitError
from attnkit.families.translation.bleu import score_translations
from attnkit.families.translation.config import TranslationRun
from attnkit.families.translation.data.corpus import corpus_splits, multi30k_dir, split_pairs
from attnkit.families.translation.data.fetch import fetch_multi30k
from attnkit.families.translation.translate import translate
from attnkit.progress import counter
from attnkit.viz.heatmap import plot_attention

PRESET, FALLBACK = "rnn-luong-m30k", "toy-reverse"
STEPS = 450  # updates of the demo (README, "The demo": what they reach, and in how many minutes)
REPORT_SENTENCES = 5
# A 4k joint BPE instead of the preset's 8k: 25.2 instead of 13.9 validation BLEU after 300 updates
# (README, "The demo"). Validation only once, at the end, on a slice of the dev set.
TRAIN_OVERRIDES = ["data.vocab_size=4000", "train.eval_every=1000000", "train.eval_max_sentences=200", "train.keep_last=1"]


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


def setup(load: Callable[[str, list[str]], TranslationRun], steps: int, minutes: float, data_dir: str | None) -> tuple[TranslationRun, str | None]:
    """The run to train (`load(preset, overrides)` reads a preset) and the data folder it reads:
    `steps` updates, or fewer if `minutes` of training pass first."""
    budget = [f"train.max_steps={steps}", f"train.max_minutes={minutes}"]
    folder = _find_multi30k(load(PRESET, []), data_dir)
    if folder is None:
        print("No Multi30k data reachable: training the built-in reverse task instead.")
        return load(FALLBACK, budget), None
    print(f"Training {PRESET} (LSTM encoder-decoder with Luong attention) on Multi30k En->De from {folder}: {steps} updates, at most {minutes:g} minutes.")
    return load(PRESET, [*budget, f"data.dir={folder}", *TRAIN_OVERRIDES]), str(folder)


def showcase(loaded: LoadedRun, data_dir: str | None, out_dir: Path, report: Callable[[list[str], int], Path]) -> None:
    """Translate the test split; print samples and BLEU; write the heatmap and (`report(lines, beam)`) the report; say how to serve."""
    pairs = split_pairs(corpus_splits(loaded.run.data, data_dir)["test"])
    src, ref = [s for s, _ in pairs], [t for _, t in pairs]
    decode = loaded.run.decode.with_overrides(beam=5) if data_dir is not None else loaded.run.decode
    with counter(len(src), "translating the test set", unit="sent") as bar:
        results = translate(loaded.model, loaded.vocabs, src, decode, return_attention=True, progress=bar.update)
    print("\nSample translations (test set):")
    for i in range(3):
        print(f"  src: {src[i]}\n  out: {results[i][0].text}\n  ref: {ref[i]}\n")
    scores = score_translations([r[0].text for r in results], ref)
    print(f"Test BLEU (beam {decode.beam}, {len(src)} sentences): {scores['bleu']:.2f}  [{scores['bleu_signature']}]")
    best = results[0][0]
    layer = " (last layer, mean over heads)" if loaded.run.model.kind == "transformer" else ""
    png = plot_attention(best.attention, best.src_pieces, best.tgt_pieces, out_dir / "attention.png", title=f"encoder-decoder attention{layer}")
    print(f"Cross-attention heatmap: {png}")
    page = report(src[:REPORT_SENTENCES], decode.beam)
    print(f"Offline HTML report ({REPORT_SENTENCES} test sentences, every attention map, the training curves): {page}")
    print(f"Explore the model in a browser: .venv/bin/attnkit serve {out_dir}   (then open http://127.0.0.1:8000)")
    if data_dir is not None:
        print(f"The full preset (60 minutes on 2 cores): .venv/bin/attnkit train {PRESET} --out runs/rnn-luong")
