"""The sentence family's codec: text -> words -> ids, and what run.json stores (words and labels).

One way to turn a text into ids (`words`, then `SentenceVocabs.vocab.encode`), used by training,
evaluation, inference and serving alike; `attnkit.data.batching.pad` pads.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from attnkit.data.tokenizers import Tokenizer, WordTokenizer
from attnkit.data.vocab import Vocabulary
from attnkit.errors import DataError
from attnkit.families.classification.data import LabelledText, LabelMap, shown_label

logger = logging.getLogger("attnkit")
_WORD = re.compile(r"\w+(?:['’-]\w+)*|['’]\w+|[^\w\s]")  # words (don't, co-writer, 's) or one symbol
_SYMBOL = re.compile(r"\W")  # any character that is not a letter, digit or underscore


@dataclass
class SentenceVocabs:
    """A sentence classifier's word vocabulary and class labels."""

    vocab: Vocabulary
    labels: LabelMap


def vocabs_to_json(vocabs: SentenceVocabs, folder: Path) -> dict[str, Any]:
    return {"vocab": vocabs.vocab.to_json(), "labels": vocabs.labels.to_json()}


def vocabs_from_json(info: dict[str, Any], folder: Path) -> SentenceVocabs:
    return SentenceVocabs(Vocabulary.from_json(info["vocab"]), LabelMap.from_json(info["labels"]))


def words(text: str, lowercase: bool, drop_symbols: bool = False) -> list[str]:
    """The words of `text` as the model reads them (normalized as in training)."""
    return WordTokenizer().tokenize(normalize(text, lowercase, drop_symbols))


def normalize(text: str, lowercase: bool = True, drop_symbols: bool = False) -> str:
    """Lowercase (optionally) and set words and punctuation apart by single spaces, for `WordTokenizer`.

    ``"Don't stop." -> "don't stop ."``; PTB-tokenised text (SST) keeps its tokens (``'s``). With
    `drop_symbols` every character that is not a letter, digit or underscore (Python's ``\\W``) becomes a
    space first, as Jain & Wallace's SST preprocessing does: ``"Don't stop, co-writer." -> "don t stop co
    writer"``.
    """
    if drop_symbols:
        text = _SYMBOL.sub(" ", text)
    return " ".join(_WORD.findall(text.lower() if lowercase else text))


def build_vocab(
    examples: Iterable[LabelledText],
    tokenizer: Tokenizer | None = None,
    min_freq: int = 1,
    max_size: int | None = None,
    lowercase: bool = True,
    drop_symbols: bool = False,
) -> Vocabulary:
    """`Vocabulary.build` over the normalized texts (both texts of a pair).

    Args:
        examples: Training examples.
        tokenizer: Splits normalized text (default: `WordTokenizer`).
        min_freq: Keep words seen at least this often.
        max_size: Largest vocabulary, the specials included.
        lowercase: Lowercase before counting (as `normalize`).
        drop_symbols: Symbols to spaces before counting (as `normalize`).
    """
    tokenizer = tokenizer or WordTokenizer()
    texts = (t for e in examples for t in (e.text, e.text2) if t is not None)
    return Vocabulary.build((tokenizer.tokenize(normalize(t, lowercase, drop_symbols)) for t in texts), min_freq, max_size)


@dataclass
class EncodedText:
    """An example as ids: ``ids`` (and ``ids2`` for a pair) without specials, and the class id."""

    ids: list[int]
    label: int
    ids2: list[int] | None = None


def encode_examples(
    examples: Iterable[LabelledText],
    vocab: Vocabulary,
    label_map: LabelMap,
    tokenizer: Tokenizer | None = None,
    lowercase: bool = True,
    drop_symbols: bool = False,
) -> list[EncodedText]:
    """Normalize, tokenize and look up every text; drop (and log) examples with no token left.

    Raises:
        DataError: A label ``label_map`` does not know.
    """
    tokenizer = tokenizer or WordTokenizer()
    encoded, dropped = [], 0
    for number, e in enumerate(examples, start=1):
        if e.label not in label_map:
            raise DataError(f"example {number}: unknown label {shown_label(repr(e.label))} (known: {label_map.shown()})")
        ids = vocab.encode(tokenizer.tokenize(normalize(e.text, lowercase, drop_symbols)))
        ids2 = None if e.text2 is None else vocab.encode(tokenizer.tokenize(normalize(e.text2, lowercase, drop_symbols)))
        if not ids or ids2 == []:
            dropped += 1
        else:
            encoded.append(EncodedText(ids, label_map.index(e.label), ids2))
    if dropped:
        logger.warning("dropped %d examples with no token after normalization", dropped)
    return encoded
