"""`make demo` / `attnkit demo`: the main job on its built-in default.

Trains `m30k-small` on Multi30k En->De for a few minutes (data from --data, data/multi30k,
../shared/data/multi30k, or downloaded), translates a few test sentences, prints test BLEU and
writes a cross-attention heatmap. With no Multi30k reachable it trains `toy-reverse` instead and
still plots a heatmap (look for the anti-diagonal).
"""

from __future__ import annotations

import logging
import shutil
from pathlib import Path

from attnkit.artifacts.lock import locked
from attnkit.config import load_config
from attnkit.data.fetch import fetch_multi30k
from attnkit.decode.translate import SearchSettings, translate
from attnkit.errors import AttnkitError
from attnkit.evaluate.bleu import score_translations
from attnkit.progress import TrainProgress
from attnkit.runs import load_run
from attnkit.train.corpus import corpus_splits, multi30k_dir, split_pairs
from attnkit.train.loop import train
from attnkit.viz.heatmap import plot_attention

log = logging.getLogger("attnkit")
PRESETS = Path(__file__).parent / "presets"


def _find_multi30k(data_dir: str | None) -> Path | None:
    cfg = load_config(PRESETS / "m30k-small.yaml").data
    try:
        return multi30k_dir(cfg, data_dir)
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


def run_demo(minutes: float, data_dir: str | None, out: str) -> int:
    folder = _find_multi30k(data_dir)
    out_dir = Path(out)
    if out_dir.exists():
        if not (out_dir / "run.json").is_file():
            raise AttnkitError(f"{out_dir}: exists and is not a run folder; choose another --out")
        with locked(out_dir):  # never delete a run that another process is training
            shutil.rmtree(out_dir)
    if folder is None:
        print("No Multi30k data reachable: training the built-in reverse task instead.")
        run = load_config(PRESETS / "toy-reverse.yaml", [f"train.max_minutes={minutes}"])
    else:
        print(f"Training m30k-small on Multi30k En->De from {folder} for {minutes:g} minutes.")
        run = load_config(PRESETS / "m30k-small.yaml", [f"train.max_minutes={minutes}", f"data.dir={folder}", "train.eval_max_sentences=200"])
    with TrainProgress(run.train) as progress:
        train(run, out_dir, on_event=progress.event)
    loaded = load_run(out_dir)
    pairs = split_pairs(corpus_splits(run.data, str(folder) if folder else None)["test"])
    src, ref = [s for s, _ in pairs], [t for _, t in pairs]
    d = loaded.run.decode
    settings = SearchSettings(beam=d.beam, alpha=d.alpha, max_len_a=d.max_len_a, max_len_b=d.max_len_b)
    results = translate(loaded.model, loaded.vocabs, src, settings, return_attention=True)
    print("\nSample translations (test set):")
    for i in range(3):
        print(f"  src: {src[i]}\n  out: {results[i][0].text}\n  ref: {ref[i]}\n")
    scores = score_translations([r[0].text for r in results], ref)
    print(f"Test BLEU (beam {d.beam}): {scores['bleu']:.2f}  [{scores['bleu_signature']}]")
    best = results[0][0]
    png = plot_attention(best.attention, best.src_pieces, best.tgt_pieces, out_dir / "attention.png", title="cross-attention (last layer, mean over heads)")
    print(f"Cross-attention heatmap: {png}")
    if folder is not None:
        print("Full-quality model (40 minutes): attnkit train configs/m30k-small.yaml --out runs/m30k")
    return 0
