"""The translation family's codec: text <-> pieces <-> ids, and what run.json stores.

One way to turn a source line into ids (`encode_sources`), used by training, validation, inference
and serving alike; `collate` (attnkit.data.batching) adds the EOS and pads.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from attnkit.data.tokenizers import Tokenizer, load_tokenizer, save_tokenizer
from attnkit.data.vocab import Vocabulary
from attnkit.errors import DataError


@dataclass(eq=False)
class Vocabs:
    """Tokenizers and vocabularies of both sides (the same vocabulary object when joint; the same
    tokenizer too, except for imported Marian models, whose sides have a SentencePiece model each).

    Two `Vocabs` are equal when their vocabularies agree id for id (tokenizer objects are not
    compared): what `--resume` checks against the data.
    """

    src_tokenizer: Tokenizer
    tgt_tokenizer: Tokenizer
    src_vocab: Vocabulary
    tgt_vocab: Vocabulary

    @property
    def joint(self) -> bool:
        return self.src_vocab is self.tgt_vocab

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Vocabs):
            return NotImplemented
        return self.src_vocab == other.src_vocab and self.tgt_vocab == other.tgt_vocab


def vocabs_to_json(vocabs: Vocabs, folder: Path) -> dict[str, Any]:
    """What run.json stores; SentencePiece models are copied into `folder`."""
    return {
        "joint": vocabs.joint,
        "src_tokenizer": save_tokenizer(vocabs.src_tokenizer, folder),
        "tgt_tokenizer": save_tokenizer(vocabs.tgt_tokenizer, folder),
        "src_vocab": vocabs.src_vocab.to_json(),
        "tgt_vocab": vocabs.tgt_vocab.to_json(),
    }


def vocabs_from_json(info: dict[str, Any], folder: Path) -> Vocabs:
    """The inverse of `vocabs_to_json` (tokenizer models read from `folder`)."""
    src_vocab = Vocabulary.from_json(info["src_vocab"])
    tgt_vocab = src_vocab if info["joint"] else Vocabulary.from_json(info["tgt_vocab"])
    src_tok = load_tokenizer(info["src_tokenizer"], folder)
    # One vocabulary may come with two tokenizers (an imported Marian model: source.spm, target.spm).
    same = info["joint"] and info["tgt_tokenizer"] == info["src_tokenizer"]
    tgt_tok = src_tok if same else load_tokenizer(info["tgt_tokenizer"], folder)
    return Vocabs(src_tok, tgt_tok, src_vocab, tgt_vocab)


def encode_sources(vocabs: Vocabs, lines: Sequence[str], max_len: int, source: str = "input") -> tuple[list[list[str]], list[list[int]]]:
    """Source pieces and ids of each line (no EOS); a line of more than `max_len` pieces is an error.

    Raises:
        DataError: naming `source` and the line number.
    """
    pieces = [vocabs.src_tokenizer.tokenize(line) for line in lines]
    for number, p in enumerate(pieces, start=1):
        if len(p) > max_len:
            raise DataError(f"{source}, line {number}: {len(p)} pieces, more than the {max_len} a line may have")
    return pieces, [vocabs.src_vocab.encode(p) for p in pieces]


def encode_pairs(loaded: Any, lines: Sequence[str], source: str = "input") -> list[tuple[list[int], list[int] | None]]:
    """(source ids, reference ids or None) of each `source<TAB>reference` line (a line without a tab: no
    reference), no EOS; `Family.pairs`, for `attnkit heads --importance`."""
    vocabs = loaded.vocabs
    split = [line.split("\t", 1) for line in lines]
    _, src = encode_sources(vocabs, [parts[0] for parts in split], loaded.run.decode.max_src_len, source)
    tgt = [vocabs.tgt_vocab.encode(vocabs.tgt_tokenizer.tokenize(parts[1])) if len(parts) == 2 else None for parts in split]
    return list(zip(src, tgt))
