"""The parsing family's codec: words <-> source ids, trees <-> target symbol ids, and run.json.

The source vocabulary holds the training words (those seen `min_freq` times) and, with
`data.unknown: signature`, the signatures of the rarer ones (`signature`): an unknown word is read
as its signature when the vocabulary has it, else as `<unk>`. The target vocabulary holds the
symbols of `linear.linearise`: ``(L`` and ``)L`` for every constituent label of the training
trees, and the leaf symbols (``XX``, or with `leaves: words` the same source tokens). With both
built from the same tokens, a word's source id and its leaf's target id name the same token (or
are both `<unk>`), which is what the constrained search relies on.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from attnkit.data.vocab import EOS, SPECIALS, UNK, Vocabulary
from attnkit.errors import DataError
from attnkit.families.parsing.linear import PLACEHOLDER, is_close, is_open, linearise
from attnkit.families.parsing.trees import Tree, parse_trees, preprocess

PUNCTUATION_TAGS = {",": ",", ".": ".", "?": ".", "!": ".", ":": ":", ";": ":", "--": ":", "-": ":", "...": ":", "``": "``", "`": "``", "''": "''",
                    "-LRB-": "-LRB-", "-RRB-": "-RRB-", "-LCB-": "-LRB-", "-RCB-": "-RRB-", "$": "$", "#": "#"}  # fmt: skip


SUFFIXES = ("ing", "ed", "ion", "er", "est", "ly", "ity", "al", "ive", "ous", "able", "ment", "ness", "ic", "y", "s")


@dataclass
class ParseVocabs:
    """Source words and target symbols; equal when both agree id for id (what --resume checks).

    `signatures`: unknown words are read as their `signature` (runs before it have none); `tags`:
    the POS tags of the training trees (for `model.tagger`; runs before it have none).
    """

    words: Vocabulary
    symbols: Vocabulary
    keep_words: bool
    signatures: bool = False
    tags: Vocabulary | None = None


def signature(word: str) -> str:
    """The class of a rare or unknown word, by shape and suffix, e.g. ``<unk-Xx-ing>``, ``<unk-num-dash>``.

    The unknown-word classes of the Berkeley parser (Petrov et al. 2006) in small: capitalisation
    (``X`` all capitals, ``Xx`` an initial one, ``x`` none), digits, an inner hyphen, and the first
    of `SUFFIXES` that the lower-cased word ends with (leaving at least three letters before it).
    """
    letters = [c for c in word if c.isalpha()]
    shape = "" if not letters else "X" if all(c.isupper() for c in letters) else "Xx" if word[0].isupper() else "x"
    lower = word.lower()
    suffix = next((s for s in SUFFIXES if lower.endswith(s) and len(lower) >= len(s) + 3), "")
    parts = [shape, "num" if any(c.isdigit() for c in word) else "", "dash" if "-" in word[1:] else "", suffix]
    return "<unk" + "".join("-" + p for p in parts if p) + ">"


def build_vocabs(trees: Sequence[Tree], *, keep_words: bool, min_freq: int, signatures: bool = False, tags: bool = False) -> ParseVocabs:
    """The vocabularies of the training trees (see the module docstring).

    With `signatures`, each word seen fewer than `min_freq` times counts as its `signature`, and
    the signatures seen `min_freq` times join the vocabulary; with `tags`, the trees' POS tags.
    """
    counts = Counter(word for tree in trees for word in tree.words())
    rare = (lambda word: signature(word) if counts[word] < min_freq else word) if signatures else (lambda word: word)
    words = Vocabulary.build([[rare(word) for word in tree.words()] for tree in trees], min_freq=min_freq)
    brackets = sorted({s for tree in trees for s in linearise(tree)[1] if is_open(s) or is_close(s)})
    leaves = words.to_json()["tokens"][len(SPECIALS) :] if keep_words else [PLACEHOLDER]
    tag_vocab = Vocabulary.build([tree.tags() for tree in trees]) if tags else None
    return ParseVocabs(words, Vocabulary([*brackets, *leaves]), keep_words, signatures, tag_vocab)


def vocabs_to_json(vocabs: ParseVocabs, folder: Path) -> dict[str, Any]:
    """What run.json stores (no files to copy)."""
    return {"words": vocabs.words.to_json(), "symbols": vocabs.symbols.to_json(), "keep_words": vocabs.keep_words,
            "signatures": vocabs.signatures, **({"tags": vocabs.tags.to_json()} if vocabs.tags is not None else {})}  # fmt: skip


def vocabs_from_json(info: dict[str, Any], folder: Path) -> ParseVocabs:
    """The inverse of `vocabs_to_json`."""
    words, symbols = Vocabulary.from_json(info["words"]), Vocabulary.from_json(info["symbols"])
    tags = Vocabulary.from_json(info["tags"]) if "tags" in info else None
    return ParseVocabs(words, symbols, bool(info["keep_words"]), bool(info.get("signatures", False)), tags)


def source_tokens(vocabs: ParseVocabs, words: Sequence[str]) -> list[str]:
    """The source token of each word: the word, or (with signatures) the signature of an unknown one."""
    if not vocabs.signatures:
        return list(words)
    return [word if word in vocabs.words else signature(word) for word in words]


def source_ids(vocabs: ParseVocabs, words: Sequence[str]) -> list[int]:
    """Source ids of `words` (no EOS): `source_tokens`, then `<unk>` for what is still unknown."""
    return vocabs.words.encode(source_tokens(vocabs, words))


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
    return [source_ids(vocabs, words) for words in sentences]


def encode_tree(vocabs: ParseVocabs, tree: Tree) -> tuple[list[int], list[int]]:
    """(source ids, target ids) of a preprocessed tree (no EOS; `collate` adds it); with `leaves:
    words` each leaf is its word's source token."""
    words, symbols = linearise(tree, keep_words=vocabs.keep_words)
    tokens = source_tokens(vocabs, words)
    leaves = iter(tokens)
    symbols = [s if is_open(s) or is_close(s) or not vocabs.keep_words else next(leaves) for s in symbols]
    return vocabs.words.encode(tokens), vocabs.symbols.encode(symbols)


def encode_tags(vocabs: ParseVocabs, tree: Tree) -> list[int]:
    """Tag ids of a preprocessed tree's words (no EOS), for the tagger's loss."""
    assert vocabs.tags is not None
    return vocabs.tags.encode(tree.tags())


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


def encode_pairs(loaded: Any, lines: Sequence[str], source: str = "input") -> list[tuple[list[int], list[int] | None]]:
    """(source ids, target ids or None) of each line, for `attnkit heads --importance` (`Family.pairs`): a
    bracketed tree (its words and its linearised tree) or a sentence (its words; no target: the run's own output)."""
    vocabs, max_len = loaded.vocabs, loaded.run.decode.max_src_len
    pairs: list[tuple[list[int], list[int] | None]] = []
    for number, line in enumerate(lines, start=1):
        where = f"{source}, line {number}"
        if not line.lstrip().startswith("("):
            pairs.append((encode_words(vocabs, [tokenize(line)], max_len, where)[0], None))
            continue
        trees = parse_trees(line, where)
        if len(trees) != 1:
            raise DataError(f"{where}: {len(trees)} trees; give one tree or one sentence a line")
        pairs.append(encode_tree(vocabs, preprocess(trees[0], where)))
    return pairs
