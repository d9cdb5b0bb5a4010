"""Translation data preparation: check, read, train tokenizers, build vocabularies, encode.

Order: `check_parallel` on file inputs (stop on ``fail``, drop ``skip`` lines) -> tokenizers
(word/char: vocabulary counted on the training data; BPE/unigram: SentencePiece trained on the
checked training text, cached, vocabulary read from the model) -> `encode_pairs` on both splits.
"""

from __future__ import annotations

import logging
import tempfile
from dataclasses import dataclass
from pathlib import Path

from attnkit.data.batching import Example, encode_pairs
from attnkit.data.text import read_lines
from attnkit.data.tokenizers import (
    CharTokenizer,
    SentencePieceTokenizer,
    Tokenizer,
    WordTokenizer,
    train_sentencepiece,
    vocab_from_sentencepiece,
)
from attnkit.data.vocab import Vocabulary
from attnkit.errors import DataError
from attnkit.families.translation.data.check import check_parallel
from attnkit.io import atomic_write_text
from attnkit.progress import counter

logger = logging.getLogger("attnkit")
PREPARE_STEPS = 5  # check train, check valid, the tokenizers, encode train, encode valid

Pairs = list[tuple[str, str]]
Source = tuple[str | Path, str | Path] | Pairs  # (source file, target file), or text pairs


@dataclass
class Prepared:
    """Everything training needs from the data.

    Attributes:
        train: Encoded training examples (ids without BOS/EOS).
        valid: Encoded validation examples.
        valid_pairs: Validation text pairs after the check (references for BLEU; some may
            be missing from ``valid`` if encoding dropped them).
        src_tokenizer: Source tokenizer.
        tgt_tokenizer: Target tokenizer (the same object when joint).
        src_vocab: Source vocabulary.
        tgt_vocab: Target vocabulary (the same object when joint).
        skipped: Per split, lines the check's ``skip`` findings removed, by check name.
        dropped: Per split, pairs `encode_pairs` removed, by reason (``empty``, ``too_long``).
    """

    train: list[Example]
    valid: list[Example]
    valid_pairs: Pairs
    src_tokenizer: Tokenizer
    tgt_tokenizer: Tokenizer
    src_vocab: Vocabulary
    tgt_vocab: Vocabulary
    skipped: dict[str, dict[str, int]]
    dropped: dict[str, dict[str, int]]


def prepare_translation(
    *,
    train: Source,
    valid: Source,
    tokenizer: str,
    vocab_size: int,
    joint: bool,
    max_len: int,
    cache_dir: str | Path,
    check_policy: dict[str, str] | None = None,
    max_ratio: float = 3.0,
    seed: int = 0,
    given: tuple[Tokenizer, Tokenizer, Vocabulary, Vocabulary] | None = None,
) -> Prepared:
    """Turn raw parallel text into encoded examples, tokenizers and vocabularies.

    Args:
        train: ``(source file, target file)`` or a list of ``(source, target)`` text pairs.
        valid: The same, for validation.
        tokenizer: ``"bpe"``, ``"unigram"``, ``"word"`` or ``"char"``.
        vocab_size: Vocabulary size, specials included (per side unless ``joint``).
        joint: One tokenizer and vocabulary for both sides, trained on both.
        max_len: Longest side in pieces (and, for the check, in whitespace tokens).
        cache_dir: Where SentencePiece models are cached.
        check_policy: Overrides of `attnkit.families.translation.data.check.DEFAULT_POLICY` for file inputs.
        max_ratio: Token-count ratio above which the check flags a pair.
        seed: Seed for SentencePiece training.
        given: (src tokenizer, tgt tokenizer, src vocab, tgt vocab) to encode with instead of
            building them (a run started from another's weights, `attnkit train --init`).

    Returns:
        The prepared data.

    Raises:
        DataError: A check fails (failing checks listed in one line), a file cannot be read, or
            no training example is left.
    """
    checked: dict[str, Pairs] = {}
    skipped: dict[str, dict[str, int]] = {}
    examples: dict[str, list[Example]] = {}
    dropped: dict[str, dict[str, int]] = {}
    with counter(PREPARE_STEPS, "preparing data", unit="step") as bar:  # the stage it is in, in the postfix
        for split, source in (("train", train), ("valid", valid)):
            bar.set_postfix_str(f"checking {split}")
            checked[split], skipped[split] = _load(source, max_len=max_len, max_ratio=max_ratio, policy=check_policy)
            bar.update(1)
        if not checked["train"]:
            raise DataError(f"no training pairs ({_describe(train)})")
        bar.set_postfix_str(f"{tokenizer} tokenizer")
        src_tok, tgt_tok, src_vocab, tgt_vocab = given or _tokenizers(checked["train"], tokenizer, vocab_size=vocab_size, joint=joint,
                                                                      cache_dir=cache_dir, seed=seed)  # fmt: skip
        bar.update(1)
        for split, pairs in checked.items():
            bar.set_postfix_str(f"encoding {split}")
            examples[split], dropped[split] = encode_pairs(pairs, src_tok, src_vocab, tgt_tok, tgt_vocab, max_len=max_len)
            bar.update(1)
    if not examples["train"]:
        raise DataError(f"no training examples left after checks and filters ({_describe(train)})")
    logger.info(
        "prepared %d train and %d valid examples; vocabularies %d / %d (%s%s)",
        len(examples["train"]),
        len(examples["valid"]),
        len(src_vocab),
        len(tgt_vocab),
        tokenizer,
        ", joint" if joint else "",
    )
    return Prepared(
        train=examples["train"],
        valid=examples["valid"],
        valid_pairs=checked["valid"],
        src_tokenizer=src_tok,
        tgt_tokenizer=tgt_tok,
        src_vocab=src_vocab,
        tgt_vocab=tgt_vocab,
        skipped=skipped,
        dropped=dropped,
    )


def _load(source: Source, *, max_len: int, max_ratio: float, policy: dict[str, str] | None) -> tuple[Pairs, dict[str, int]]:
    """Return text pairs (checked, with ``skip`` lines removed, for files) and the skip counts."""
    if isinstance(source, list):
        return source, {}
    src_path, tgt_path = source
    report = check_parallel(src_path, tgt_path, max_len=max_len, max_ratio=max_ratio, policy=policy)
    if report.failed:
        raise DataError(f"{report.first_failure()} (data check: {report.describe('fail')}; `attnkit data check {src_path} {tgt_path}` shows the table)")
    if report.describe("warn"):
        logger.warning("%s / %s: %s (kept)", src_path, tgt_path, report.describe("warn"))
    skip = report.skip_lines
    src, tgt = read_lines(src_path, errors="replace"), read_lines(tgt_path, errors="replace")
    pairs = [pair for number, pair in enumerate(zip(src, tgt), start=1) if number not in skip]
    if skip:
        logger.warning("%s / %s: skipped %d lines: %s", src_path, tgt_path, len(skip), report.describe("skip"))
    return pairs, {f.name: f.count for f in report.findings if f.action == "skip" and f.count}


def _tokenizers(
    pairs: Pairs, kind: str, *, vocab_size: int, joint: bool, cache_dir: str | Path, seed: int
) -> tuple[Tokenizer, Tokenizer, Vocabulary, Vocabulary]:
    """Build (src tokenizer, tgt tokenizer, src vocab, tgt vocab) from the training pairs."""
    sides = ([src for src, _ in pairs], [tgt for _, tgt in pairs])
    if kind in ("word", "char"):
        make = WordTokenizer if kind == "word" else CharTokenizer
        if joint:
            tok = make()
            token_lists = (tok.tokenize(t) for side in sides for t in side)
            vocab = Vocabulary.build(token_lists, max_size=vocab_size)
            return tok, tok, vocab, vocab
        src_tok, tgt_tok = make(), make()
        src_vocab = Vocabulary.build((src_tok.tokenize(t) for t in sides[0]), max_size=vocab_size)
        tgt_vocab = Vocabulary.build((tgt_tok.tokenize(t) for t in sides[1]), max_size=vocab_size)
        return src_tok, tgt_tok, src_vocab, tgt_vocab
    if kind not in ("bpe", "unigram"):
        raise ValueError(f"tokenizer must be bpe, unigram, word or char, not {kind!r}")
    with tempfile.TemporaryDirectory() as tmp:
        files = [Path(tmp) / "train.src", Path(tmp) / "train.tgt"]
        for path, texts in zip(files, sides):
            atomic_write_text(path, "".join(f"{t}\n" for t in texts))  # a full disk is one line
        groups = [files] if joint else [[files[0]], [files[1]]]
        settings = dict(model_type=kind, vocab_size=vocab_size, cache_dir=cache_dir, seed=seed)
        models = [train_sentencepiece(group, **settings) for group in groups]
    toks = [SentencePieceTokenizer(model) for model in models]
    vocabs = [vocab_from_sentencepiece(model) for model in models]
    return toks[0], toks[-1], vocabs[0], vocabs[-1]


def _describe(source: Source) -> str:
    """Name a source in messages: its two files, or the number of in-memory pairs."""
    if isinstance(source, list):
        return f"{len(source)} given pairs"
    return f"{source[0]} / {source[1]}"
