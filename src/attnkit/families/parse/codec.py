"""The parsing family's codec: words <-> source ids, trees <-> target symbol ids, and run.json.

The source vocabulary holds the training words (those seen `min_freq` times); the target
vocabulary holds the symbols of `linear.linearise`: ``(L`` and ``)L`` for every constituent label
of the training trees, and the leaf symbols (``XX``, or with `leaves: words` the same frequent
training words). With both built from the same words, a word's source id and its leaf's target
id name the same word (or are both `<unk>`), which is what the constrained search relies on.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from attnkit.data.vocab import EOS, SPECIALS, UNK, Vocabulary
from attnkit.errors import DataError
from attnkit.families.parse.linear import PLACEHOLDER, is_close, is_open, linearise
from attnkit.families.parse.trees import Tree

PUNCTUATION_TAGS = {",": ",", ".": ".", "?": ".", "!": ".", ":": ":", ";": ":", "--": ":", "...": ":", "``": "``", "''": "''",
                    "-LRB-": "-LRB-", "-RRB-": "-RRB-", "-LCB-": "-LRB-", "-RCB-": "-RRB-", "$": "$", "#": "#"}  # fmt: skip


@dataclass
class ParseVocabs:
    """Source words and target symbols; equal when both agree id for id (what --resume checks)."""

    words: Vocabulary
    symbols: Vocabulary
    keep_words: bool


def build_vocabs(trees: Sequence[Tree], *, keep_words: bool, min_freq: int) -> ParseVocabs:
    """The vocabularies of the training trees (see the module docstring)."""
    words = Vocabulary.build([tree.words() for tree in trees], min_freq=min_freq)
    brackets = sorted({s for tree in trees for s in linearise(tree)[1] if is_open(s) or is_close(s)})
    leaves = words.to_json()["tokens"][len(SPECIALS) :] if keep_words else [PLACEHOLDER]
    return ParseVocabs(words, Vocabulary([*brackets, *leaves]), keep_words)


def vocabs_to_json(vocabs: ParseVocabs, folder: Path) -> dict[str, Any]:
    """What run.json stores (no files to copy)."""
    return {"words": vocabs.words.to_json(), "symbols": vocabs.symbols.to_json(), "keep_words": vocabs.keep_words}


def vocabs_from_json(info: dict[str, Any], folder: Path) -> ParseVocabs:
    """The inverse of `vocabs_to_json`."""
    return ParseVocabs(Vocabulary.from_json(info["words"]), Vocabulary.from_json(info["symbols"]), bool(info["keep_words"]))


def encode_words(vocabs: ParseVocabs, sentences: Sequence[Sequence[str]], max_len: int, source: str = "input") -> list[list[int]]:
    """Source ids of each sentence (no EOS).

    Raises:
        DataError: A sentence has no words or more than `max_len` (naming `source` and the line).
    """
    for number, words in enumerate(sentences, start=1):
        if not words:
            raise DataError(f"{source}, line {number}: no words to parse")
        if len(words) > max_len:
            raise DataError(f"{source}, line {number}: {len(words)} words, more than the model's limit of {max_len}")
    return [vocabs.words.encode(words) for words in sentences]


def encode_tree(vocabs: ParseVocabs, tree: Tree) -> tuple[list[int], list[int]]:
    """(source ids, target ids) of a preprocessed tree (no EOS; `collate` adds it)."""
    words, symbols = linearise(tree, keep_words=vocabs.keep_words)
    return vocabs.words.encode(words), vocabs.symbols.encode(symbols)


def leaf_table(vocabs: ParseVocabs) -> list[int]:
    """For each source id, the target id of its leaf symbol (``XX``, the word, or `<unk>`)."""
    if not vocabs.keep_words:
        return [vocabs.symbols.encode([PLACEHOLDER])[0]] * len(vocabs.words)
    words = vocabs.words.to_json()["tokens"]
    return [vocabs.symbols.encode([word])[0] if i > EOS else UNK for i, word in enumerate(words)]


def guess_tags(words: Sequence[str]) -> list[str]:
    """POS tags for a parse without gold tags: the punctuation tags of the PTB, else ``XX``.

    The parser predicts no tags (Vinyals et al. 2015 normalise them to ``XX``); EVALB with
    COLLINS.prm drops punctuation by its tag, so punctuation must carry its PTB tag.
    """
    return [PUNCTUATION_TAGS.get(word, PLACEHOLDER) for word in words]


_TOKENS = re.compile(r"``|''|\.\.\.|--|[A-Za-z]+(?=n't\b)|n't\b|'(?:s|re|ve|ll|d|m)\b|[A-Za-z0-9]+(?:[-./,:][A-Za-z0-9]+)*\.?|\S", re.IGNORECASE)
_BRACKETS = {"(": "-LRB-", ")": "-RRB-", "{": "-LCB-", "}": "-RCB-", "[": "-LSB-", "]": "-RSB-"}


def tokenize(text: str) -> list[str]:
    """A small PTB-style tokenizer for raw text: clitics (n't, 's) and punctuation split off,
    quotes as `` and '', brackets as -LRB- / -RRB-."""
    text = re.sub(r'^"|(?<=[\s(\[{])"', " `` ", text).replace('"', " '' ")
    out = []
    for token in _TOKENS.findall(text):
        if token.endswith(".") and len(token) > 1 and not re.fullmatch(r"(?:[A-Za-z]\.)+|[A-Z][a-z]{0,3}\.", token):
            out.extend([token[:-1], "."])  # a sentence-final period, not an abbreviation
        else:
            out.append(_BRACKETS.get(token, token))
    return out
