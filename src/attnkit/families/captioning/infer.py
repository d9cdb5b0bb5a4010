"""Caption images with a trained run: greedy or beam search over the Show-Attend-Tell decoder.

`caption_images` decodes images (paths or encoded bytes) at the run's input size and returns, per
image, the caption, its n-best list and the attention alpha_t over the P grid cells for every
generated word (and the EOS step), the maps `figure.attention_strip` overlays on the image. Row t of
the attention is the step that emitted word t; a step that emitted padding or BOS (an untrained
model can) shows no word, and its row is left out with it (`word_attention`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import torch

from attnkit.artifacts.runs import LoadedRun
from attnkit.config.schema import Decode
from attnkit.data.vocab import BOS, EOS, PAD
from attnkit.decode.beam import beam_search
from attnkit.decode.greedy import greedy
from attnkit.decode.hypothesis import Hypothesis
from attnkit.families.captioning.codec import detokenize
from attnkit.families.captioning.images import decode_image, load_image, resize_for_encoder, to_tensor


@dataclass
class CaptionResult:
    """One image's caption.

    Attributes:
        caption: the best caption.
        words: its words, and ``</s>`` when it finished.
        score: its search score (log-probability / length penalty).
        attention: alpha_t over the cells, one row per entry of ``words`` (rows of P = grid^2).
        grid: cells per side.
        nbest: (caption, score) of each hypothesis, best first.
    """

    caption: str
    words: list[str]
    score: float
    attention: list[list[float]]
    grid: int
    nbest: list[tuple[str, float]] = field(default_factory=list)


def search(model: torch.nn.Module, cells: torch.Tensor, decode: Decode, max_len: int) -> list[list[Hypothesis]]:
    """Greedy (beam 1) or beam search over encoder cells ``(B, P, C)``; at most `max_len` words."""
    keep = torch.ones(cells.shape[:2], dtype=torch.bool, device=cells.device)  # (B, P)
    limits = {"max_len_a": 0.0, "max_len_b": max_len + 1, "bos": BOS, "eos": EOS, "return_attention": True}
    if decode.beam == 1:
        return [[h] for h in greedy(model, cells, keep, **limits)]
    return beam_search(model, cells, keep, beam=decode.beam, alpha=decode.alpha, nbest=decode.nbest, **limits)


@torch.inference_mode()
def caption_images(loaded: LoadedRun, images: Sequence[str | Path | bytes], decode: Decode | None = None, *,
                   names: Sequence[str] | None = None, batch_size: int = 16, progress: Callable[[int], None] | None = None) -> list[CaptionResult]:  # fmt: skip
    """Caption `images` (paths or encoded bytes; `names` name bytes in errors) with a loaded run;
    `progress(n)` is called with the number of images of each batch captioned.

    Raises:
        DataError: an input that is not a readable image (naming it).
    """
    decode = decode or loaded.run.decode
    model, cfg, vocab = loaded.model, loaded.run.model, loaded.vocabs.vocab
    device = next(model.parameters()).device
    results: list[CaptionResult] = []
    for start in range(0, len(images), batch_size):
        chunk = images[start : start + batch_size]
        loaded_images = []
        for i, image in enumerate(chunk):
            if isinstance(image, bytes):
                name = names[start + i] if names else f"image {start + i + 1}"
                loaded_images.append(to_tensor(resize_for_encoder(decode_image(image, name), cfg.input_size)))
            else:
                loaded_images.append(load_image(image, size=cfg.input_size))
        batch = torch.stack(loaded_images).to(device)  # (B, 3, H, W)
        cells = model.image_grid(batch.to(next(model.parameters()).dtype))  # (B, P, C)
        for hyps in search(model, cells, decode, loaded.run.data.max_len):
            best = hyps[0]
            words = vocab.decode(best.tokens) + (["</s>"] if best.finished else [])
            nbest = [(detokenize(vocab, h.tokens), h.score) for h in hyps]
            results.append(CaptionResult(detokenize(vocab, best.tokens), words, best.score, word_attention(best), model.grid, nbest))
        if progress is not None:
            progress(len(chunk))
    return results


def word_attention(best: Hypothesis) -> list[list[float]]:
    """alpha_t of the steps whose word the caption shows, one row per entry of its ``words``: the search
    records a row per step, and a step that emitted padding or BOS (which `Vocabulary.decode` drops) has no word."""
    if best.attention is None:
        return []
    steps = [t for t, token in enumerate(best.tokens) if token not in (PAD, BOS)] + [len(best.tokens)] * best.finished  # + the EOS step
    return best.attention[steps].float().tolist()  # (words, P)
