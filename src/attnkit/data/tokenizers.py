"""Tokenizers: text -> pieces -> text, by whitespace, by character, or by SentencePiece.

SentencePiece (Kudo & Richardson, 2018) is trained as BPE (Sennrich et al., 2016) or as a
unigram language model (Kudo, 2018). Models are trained without normalization and keep every
space, so ``detokenize(tokenize(x)) == x`` and BLEU is computed against untouched references.
"""

from __future__ import annotations

import hashlib
import io
import json
import logging
import random
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Protocol

import sentencepiece as spm

from attnkit.data.text import iter_byte_lines, read_lines
from attnkit.data.vocab import BOS, EOS, PAD, SPECIALS, UNK, Vocabulary
from attnkit.errors import CheckpointError, DataError
from attnkit.io import atomic_write_bytes

logger = logging.getLogger("attnkit")

SPACE = "\u2581"  # "▁", SentencePiece's visible space
_NUM_THREADS = 4  # fixed: SentencePiece's result depends on its thread count
_RECIPE = 1  # bump when the training recipe changes so cached models are not reused
_MODEL_TYPES = {1: "unigram", 2: "bpe", 3: "word", 4: "char"}  # TrainerSpec.ModelType


class Tokenizer(Protocol):
    """Turns text into pieces and back; `to_dict` and `load_tokenizer` save and restore it."""

    kind: str

    def tokenize(self, text: str) -> list[str]:
        """Split text into pieces."""
        ...

    def detokenize(self, pieces: Sequence[str]) -> str:
        """Join pieces back into text."""
        ...

    def to_dict(self) -> dict[str, str]:
        """Describe the tokenizer as JSON-ready data for `load_tokenizer`."""
        ...


class WordTokenizer:
    """Splits on runs of whitespace; detokenize joins with single spaces."""

    kind = "word"

    def tokenize(self, text: str) -> list[str]:
        """Split text on whitespace."""
        return text.split()

    def detokenize(self, pieces: Sequence[str]) -> str:
        """Join pieces with single spaces."""
        return " ".join(pieces)

    def to_dict(self) -> dict[str, str]:
        """Return ``{"kind": "word"}``."""
        return {"kind": self.kind}


class CharTokenizer:
    """One piece per character, spaces shown as "▁" (exact unless the text itself has "▁")."""

    kind = "char"

    def tokenize(self, text: str) -> list[str]:
        """Split text into characters, spaces as "▁"."""
        return list(text.replace(" ", SPACE))

    def detokenize(self, pieces: Sequence[str]) -> str:
        """Concatenate characters, "▁" back to spaces."""
        return "".join(pieces).replace(SPACE, " ")

    def to_dict(self) -> dict[str, str]:
        """Return ``{"kind": "char"}``."""
        return {"kind": self.kind}


class SentencePieceTokenizer:
    """A trained SentencePiece model (BPE or unigram), read from its ``.model`` file.

    Args:
        model_path: The ``.model`` file.

    Raises:
        DataError: The file is missing, not a SentencePiece model, or neither BPE nor unigram.
    """

    def __init__(self, model_path: str | Path) -> None:
        self.model_path = Path(model_path)
        self._processor = _load_processor(self.model_path)
        proto = self._processor.serialized_model_proto()
        self.kind = _model_type(proto)
        if self.kind not in ("bpe", "unigram"):
            raise DataError(f"{self.model_path}: a {self.kind} SentencePiece model; expected bpe or unigram")
        # NormalizerSpec (field 3).remove_extra_whitespaces (field 4, default true): false in attnkit's own
        # models (lossless); true in most others (OPUS-MT's), whose text detokenize strips as MarianTokenizer does.
        normalizer = next((value for number, value in _proto_fields(proto) if number == 3), b"")
        self._strip = bool(next((value for number, value in _proto_fields(normalizer) if number == 4), 1))

    def tokenize(self, text: str) -> list[str]:
        """Encode text as SentencePiece pieces."""
        return self._processor.encode(text, out_type=str)

    def detokenize(self, pieces: Sequence[str]) -> str:
        """Decode pieces back to text; a piece the model lacks (another side's, in a shared vocabulary) keeps its text, "▁" as a space."""
        text = self._processor.decode_pieces(list(pieces)).replace(SPACE, " ")
        return text.strip() if self._strip else text

    def to_dict(self) -> dict[str, str]:
        """Return kind and the model's file name (the file itself is saved by `save_tokenizer`)."""
        return {"kind": self.kind, "model": self.model_path.name}


def train_sentencepiece(
    texts_files: Sequence[str | Path],
    *,
    model_type: str = "bpe",
    vocab_size: int,
    cache_dir: str | Path,
    character_coverage: float = 1.0,
    seed: int = 0,
    input_sentence_size: int = 1_000_000,
) -> Path:
    """Train a SentencePiece model once per input and settings, and cache it.

    The file name holds a sha256 of the files' (decompressed) contents and of every setting;
    a model already in ``cache_dir`` under that name is reused. Training writes to a temporary
    file that is renamed into place, so a cached model is never half-written. Training is
    deterministic: a seeded sample of ``input_sentence_size`` lines and a fixed thread count.

    Args:
        texts_files: Plain or ``.gz`` text files, one sentence per line (both sides for a
            joint model).
        model_type: ``"bpe"`` or ``"unigram"``.
        vocab_size: Pieces in the model, the four specials included.
        cache_dir: Folder for cached models (created if missing).
        character_coverage: Share of characters the model must cover (1.0 = all).
        seed: Seed for the line sample and SentencePiece's own random generator.
        input_sentence_size: Train on at most this many lines.

    Returns:
        Path of the ``.model`` file, whose ids 0-3 are the specials of `Vocabulary`.

    Raises:
        DataError: An input cannot be read, or SentencePiece rejects the data or settings.
    """
    if model_type not in ("bpe", "unigram"):
        raise ValueError(f"model_type must be 'bpe' or 'unigram', not {model_type!r}")
    files = [Path(f) for f in texts_files]
    settings = {
        "recipe": _RECIPE,
        "sentencepiece": spm.__version__,
        "model_type": model_type,
        "vocab_size": vocab_size,
        "character_coverage": character_coverage,
        "seed": seed,
        "input_sentence_size": input_sentence_size,
    }
    digest = hashlib.sha256(json.dumps(settings, sort_keys=True).encode())
    for path in files:
        digest.update(_content_sha256(path))
    model_path = Path(cache_dir) / f"spm-{model_type}-{vocab_size}-{digest.hexdigest()[:16]}.model"
    if model_path.is_file():
        logger.info("reusing SentencePiece model %s", model_path)
        return model_path
    lines = [line for path in files for line in read_lines(path) if line]
    if len(lines) > input_sentence_size:
        lines = random.Random(seed).sample(lines, input_sentence_size)
    logger.info("training %s SentencePiece (%d pieces) on %d lines", model_type, vocab_size, len(lines))
    try:
        model = _train(
            lines,
            model_type=model_type,
            vocab_size=vocab_size,
            character_coverage=character_coverage,
            seed=seed,
        )
    except RuntimeError as err:
        names = ", ".join(str(path) for path in files)
        raise DataError(f"SentencePiece training on {names} failed: {err}") from err
    atomic_write_bytes(model_path, model)
    logger.info("saved SentencePiece model %s", model_path)
    return model_path


def vocab_from_sentencepiece(model_path: str | Path) -> Vocabulary:
    """Read a SentencePiece model's pieces as a Vocabulary with the same ids.

    Args:
        model_path: A ``.model`` file trained by `train_sentencepiece`.

    Returns:
        The Vocabulary; ``vocab.encode(tokenizer.tokenize(x))`` equals SentencePiece's ids.

    Raises:
        DataError: The model is unreadable or its ids 0-3 are not the Vocabulary specials.
    """
    processor = _load_processor(Path(model_path))
    pieces = [processor.id_to_piece(i) for i in range(processor.get_piece_size())]
    if tuple(pieces[: len(SPECIALS)]) != SPECIALS:
        raise DataError(f"{model_path}: ids 0-3 are {pieces[: len(SPECIALS)]}, expected {list(SPECIALS)} (train it with attnkit's train_sentencepiece)")
    return Vocabulary(pieces[len(SPECIALS) :])


def save_tokenizer(tokenizer: Tokenizer, run_dir: str | Path) -> dict[str, str]:
    """Store what a tokenizer needs in a run folder (the SentencePiece model file, atomically).

    Args:
        tokenizer: The tokenizer to save.
        run_dir: The run folder.

    Returns:
        ``tokenizer.to_dict()``, for the run's JSON; `load_tokenizer` reverses it.
    """
    if isinstance(tokenizer, SentencePieceTokenizer):
        atomic_write_bytes(Path(run_dir) / tokenizer.model_path.name, tokenizer.model_path.read_bytes())
    return tokenizer.to_dict()


def load_tokenizer(d: dict[str, str], run_dir: str | Path) -> Tokenizer:
    """Rebuild a tokenizer from `to_dict` output, reading a SentencePiece model from ``run_dir``.

    Args:
        d: The dict `Tokenizer.to_dict` (or `save_tokenizer`) returned.
        run_dir: The run folder holding the model file.

    Returns:
        The tokenizer.

    Raises:
        CheckpointError: Unknown kind, or the model file is missing or of another kind.
    """
    kind = d.get("kind")
    if kind == "word":
        return WordTokenizer()
    if kind == "char":
        return CharTokenizer()
    if kind not in ("bpe", "unigram"):
        raise CheckpointError(f"{run_dir}: unknown tokenizer kind {kind!r} (word, char, bpe or unigram)")
    path = Path(run_dir) / d.get("model", "")
    if not path.is_file():
        raise CheckpointError(f"{path}: no such file (the {kind} tokenizer model of run {run_dir})")
    tokenizer = SentencePieceTokenizer(path)
    if tokenizer.kind != kind:
        raise CheckpointError(f"{path}: a {tokenizer.kind} model, but the run says {kind}")
    return tokenizer


def _train(lines: list[str], *, model_type: str, vocab_size: int, character_coverage: float, seed: int) -> bytes:
    """Run the SentencePiece trainer in memory; return the serialized model.

    Settings: attnkit's special ids and surface forms, no normalization and no whitespace
    collapsing (lossless), a fixed thread count (the result depends on it), and quiet logs.
    """
    spm.set_random_generator_seed(seed)
    model = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(lines),
        model_writer=model,
        model_type=model_type,
        vocab_size=vocab_size,
        character_coverage=character_coverage,
        pad_id=PAD,
        unk_id=UNK,
        bos_id=BOS,
        eos_id=EOS,
        pad_piece=SPECIALS[PAD],
        unk_piece=SPECIALS[UNK],
        bos_piece=SPECIALS[BOS],
        eos_piece=SPECIALS[EOS],
        normalization_rule_name="identity",
        remove_extra_whitespaces=False,
        num_threads=_NUM_THREADS,
        minloglevel=2,
    )
    return model.getvalue()


def _content_sha256(path: Path) -> bytes:
    """sha256 of a file's decompressed bytes (so a file and its ``.gz`` hash alike)."""
    digest = hashlib.sha256()
    for line in iter_byte_lines(path):
        digest.update(line)
    return digest.digest()


def _load_processor(path: Path) -> spm.SentencePieceProcessor:
    """Load a SentencePiece model file, with errors that name it."""
    if not path.is_file():
        raise DataError(f"{path}: no such file (SentencePiece model)")
    try:
        return spm.SentencePieceProcessor(model_file=str(path))
    except (RuntimeError, OSError) as err:
        raise DataError(f"{path}: not a SentencePiece model ({err})") from err


def _model_type(proto: bytes) -> str:
    """Read TrainerSpec.model_type (ModelProto field 2, then field 3) from a serialized model."""
    trainer_spec = next((value for number, value in _proto_fields(proto) if number == 2), b"")
    code = next((value for number, value in _proto_fields(trainer_spec) if number == 3), 1)
    return _MODEL_TYPES.get(code, f"type-{code}")


def _proto_fields(buf: bytes) -> Iterator[tuple[int, int | bytes | None]]:
    """Yield ``(field number, value)`` of a protobuf message (varints and byte strings decoded).

    By hand, not ``sentencepiece_model_pb2``: that needs protobuf, which is not a dependency
    (docs/design/libraries.md; the tests compare the two)."""
    view, pos = memoryview(buf), 0
    while pos < len(view):
        key, pos = _varint(view, pos)
        number, wire_type = key >> 3, key & 7
        value: int | bytes | None = None
        if wire_type == 0:
            value, pos = _varint(view, pos)
        elif wire_type == 2:
            size, pos = _varint(view, pos)
            value, pos = bytes(view[pos : pos + size]), pos + size
        elif wire_type in (1, 5):
            pos += 8 if wire_type == 1 else 4
        else:
            raise DataError(f"malformed SentencePiece model (protobuf wire type {wire_type})")
        yield number, value


def _varint(view: memoryview, pos: int) -> tuple[int, int]:
    """Decode a protobuf base-128 varint at ``pos``; return it and the next position."""
    value = shift = 0
    while True:
        byte = view[pos]
        value |= (byte & 0x7F) << shift
        shift, pos = shift + 7, pos + 1
        if byte < 0x80:
            return value, pos
