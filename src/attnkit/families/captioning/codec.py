"""The captioning family's codec: caption text -> words -> ids, and what run.json stores.

`words` is the one tokenization of captions (training targets, validation references, the
fallback of `scores` without Java): lowercase, words of letters and digits (with an inner
apostrophe: ``don't``), punctuation dropped, as the COCO caption evaluation's PTB tokenizer drops
it. `CaptionVocabs` holds the word vocabulary and the encoder the run actually trained (``lite0``,
or ``small_cnn`` when the Lite0 weights were missing), so a run loads with the right encoder.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from attnkit.data.vocab import Vocabulary

_WORD = re.compile(r"[^\W_]+(?:'[^\W_]+)*")


@dataclass
class CaptionVocabs:
    """A captioner's word vocabulary and the encoder its weights belong to."""

    vocab: Vocabulary
    encoder: str


def vocabs_to_json(vocabs: CaptionVocabs, folder: Path) -> dict[str, Any]:
    return {"vocab": vocabs.vocab.to_json(), "encoder": vocabs.encoder}


def vocabs_from_json(info: dict[str, Any], folder: Path) -> CaptionVocabs:
    encoder = info["encoder"]
    if encoder not in ("lite0", "small_cnn"):
        raise ValueError(f"unknown encoder {encoder!r}")
    return CaptionVocabs(Vocabulary.from_json(info["vocab"]), encoder)


def words(caption: str) -> list[str]:
    """The words of a caption as the captioner reads and writes them: ``"A dog, running." -> [a, dog, running]``."""
    return _WORD.findall(caption.lower())


def build_vocab(captions: Iterable[str], min_freq: int) -> Vocabulary:
    """The vocabulary of the training captions' words seen at least `min_freq` times."""
    return Vocabulary.build((words(c) for c in captions), min_freq=min_freq)


def encode_caption(vocab: Vocabulary, caption: str, max_len: int) -> list[int]:
    """A caption's word ids, cut to `max_len` words (no BOS/EOS)."""
    return vocab.encode(words(caption)[:max_len])


def detokenize(vocab: Vocabulary, ids: Iterable[int]) -> str:
    """Generated ids as a caption string (words joined by spaces, stopping at EOS)."""
    return " ".join(vocab.decode(ids))
