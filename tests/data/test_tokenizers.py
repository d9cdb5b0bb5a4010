"""Tests for attnkit.data.tokenizers: round trips, SentencePiece ids = Vocabulary ids, caching."""

from __future__ import annotations

from pathlib import Path

import pytest
import sentencepiece as spm

from attnkit.data import tokenizers
from attnkit.data.text import read_lines
from attnkit.data.tokenizers import (
    CharTokenizer,
    SentencePieceTokenizer,
    WordTokenizer,
    load_tokenizer,
    save_tokenizer,
    train_sentencepiece,
    vocab_from_sentencepiece,
)
from attnkit.data.vocab import SPECIALS
from attnkit.errors import CheckpointError, DataError

VOCAB_SIZE = 500


@pytest.fixture(scope="module", params=["bpe", "unigram"])
def spm_model(
    request: pytest.FixtureRequest,
    m30k_slice: dict[str, Path],
    tmp_path_factory: pytest.TempPathFactory,
) -> Path:
    """A joint en+de model trained on 2,000 Multi30k lines per side."""
    cache = tmp_path_factory.mktemp(f"spm_{request.param}")
    files = [m30k_slice["train.en"], m30k_slice["train.de"]]
    return train_sentencepiece(files, model_type=request.param, vocab_size=VOCAB_SIZE, cache_dir=cache, seed=1)


def test_word_tokenizer() -> None:
    tok = WordTokenizer()
    assert tok.tokenize(" Ein  Hund\tläuft. ") == ["Ein", "Hund", "läuft."]
    assert tok.detokenize(["Ein", "Hund"]) == "Ein Hund"
    assert tok.to_dict() == {"kind": "word"}


def test_char_tokenizer_round_trip_is_exact() -> None:
    tok = CharTokenizer()
    text = "Zwei  Hunde, ä!"
    assert tok.tokenize("a b") == ["a", "\u2581", "b"]
    assert tok.detokenize(tok.tokenize(text)) == text
    assert tok.to_dict() == {"kind": "char"}


def test_sentencepiece_round_trip_on_real_lines(spm_model: Path, multi30k: Path) -> None:
    tok = SentencePieceTokenizer(spm_model)
    # Held-out lines, with the double spaces and stray characters the README lists.
    lines = read_lines(multi30k / "val.de.gz") + read_lines(multi30k / "val.fr.gz")
    assert all(tok.detokenize(tok.tokenize(line)) == line for line in lines)
    assert tok.tokenize("Ein Hund.")[0].startswith("\u2581")


def test_kind_is_read_from_the_model(spm_model: Path) -> None:
    kind = "bpe" if "-bpe-" in spm_model.name else "unigram"
    assert SentencePieceTokenizer(spm_model).kind == kind
    assert SentencePieceTokenizer(spm_model).to_dict() == {"kind": kind, "model": spm_model.name}


def test_the_fields_read_by_hand_equal_sentencepiece_model_pb2(tmp_path: Path) -> None:
    """attnkit reads two fields of the model proto by hand (protobuf is not a dependency: docs/design/libraries.md);
    sentencepiece's own generated reader, which needs protobuf, must read the same values, for every model type
    and for remove_extra_whitespaces set, unset (its default: true) and cleared."""
    pb2 = pytest.importorskip("sentencepiece.sentencepiece_model_pb2", reason="needs protobuf (make test installs it)")
    lines = [" ".join(f"w{(i * j) % 23}x{j % 5}" for j in range(1, 9)) for i in range(200)]
    (tmp_path / "own.model").write_bytes(tokenizers._train(lines, model_type="bpe", vocab_size=28, character_coverage=1.0, seed=1))
    proto = pb2.ModelProto.FromString((tmp_path / "own.model").read_bytes())
    assert not proto.normalizer_spec.remove_extra_whitespaces and SentencePieceTokenizer(tmp_path / "own.model")._strip is False
    for name, code in pb2.TrainerSpec.ModelType.items():
        proto.trainer_spec.model_type = code
        assert tokenizers._model_type(proto.SerializeToString()) == name.lower()
    proto.trainer_spec.model_type = pb2.TrainerSpec.UNIGRAM
    for change in (lambda n: setattr(n, "remove_extra_whitespaces", True), lambda n: n.ClearField("remove_extra_whitespaces")):
        change(proto.normalizer_spec)
        path = tmp_path / "changed.model"
        path.write_bytes(proto.SerializeToString())
        assert SentencePieceTokenizer(path)._strip is proto.normalizer_spec.remove_extra_whitespaces is True


def test_vocabulary_ids_equal_sentencepiece_ids(spm_model: Path, m30k_slice: dict[str, Path]) -> None:
    processor = spm.SentencePieceProcessor(model_file=str(spm_model))
    assert [processor.id_to_piece(i) for i in range(4)] == list(SPECIALS)
    ids = (processor.pad_id(), processor.unk_id(), processor.bos_id(), processor.eos_id())
    assert ids == (0, 1, 2, 3)
    vocab, tok = vocab_from_sentencepiece(spm_model), SentencePieceTokenizer(spm_model)
    assert len(vocab) == VOCAB_SIZE
    for line in read_lines(m30k_slice["val.en"]) + ["Ünïcödé ☃ unseen"]:
        assert vocab.encode(tok.tokenize(line)) == processor.encode(line)


def test_cache_is_reused_not_retrained(spm_model: Path, m30k_slice: dict[str, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    files = [m30k_slice["train.en"], m30k_slice["train.de"]]
    kind = SentencePieceTokenizer(spm_model).kind
    mtime = spm_model.stat().st_mtime_ns

    def no_training(**_: object) -> None:
        raise AssertionError("retrained although cached")

    monkeypatch.setattr(tokenizers.spm.SentencePieceTrainer, "train", no_training)
    again = train_sentencepiece(files, model_type=kind, vocab_size=VOCAB_SIZE, cache_dir=spm_model.parent, seed=1)
    assert again == spm_model
    assert spm_model.stat().st_mtime_ns == mtime
    assert sorted(p.name for p in spm_model.parent.iterdir()) == [spm_model.name]  # no temp files


def test_cache_key_covers_content_and_every_setting(m30k_slice: dict[str, Path], tmp_path: Path) -> None:
    small = tmp_path / "small.txt"
    lines = read_lines(m30k_slice["train.en"])[:300]
    small.write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")
    base = dict(model_type="bpe", vocab_size=200, cache_dir=tmp_path / "cache", seed=0)
    first = train_sentencepiece([small], **base)
    assert train_sentencepiece([small], **{**base, "seed": 1}) != first
    assert train_sentencepiece([small], **{**base, "vocab_size": 201}) != first
    assert train_sentencepiece([small], **{**base, "character_coverage": 0.9995}) != first
    other = tmp_path / "other" / "small.txt"  # same content elsewhere: same model
    other.parent.mkdir()
    other.write_bytes(small.read_bytes())
    assert train_sentencepiece([other], **base) == first
    small.write_text("Ein anderer Text.\n" * 50, encoding="utf-8")
    assert train_sentencepiece([small], **{**base, "vocab_size": 40}) != first


def test_training_is_deterministic(m30k_slice: dict[str, Path], tmp_path: Path) -> None:
    files = [m30k_slice["train.de"]]
    settings = dict(model_type="unigram", vocab_size=300, seed=5)
    one = train_sentencepiece(files, cache_dir=tmp_path / "a", **settings)
    two = train_sentencepiece(files, cache_dir=tmp_path / "b", **settings)
    assert one.read_bytes() == two.read_bytes()


def test_failed_training_leaves_nothing(tmp_path: Path) -> None:
    text = tmp_path / "tiny.txt"
    text.write_text("a b c\n", encoding="utf-8")
    message = rf"^SentencePiece training on {text} failed: .*[Vv]ocabulary size"
    with pytest.raises(DataError, match=message):
        train_sentencepiece([text], vocab_size=5000, cache_dir=tmp_path / "cache")
    assert list((tmp_path / "cache").glob("*")) == []


def test_missing_training_file(tmp_path: Path) -> None:
    with pytest.raises(DataError, match=r"/absent\.txt: no such file$"):
        train_sentencepiece([tmp_path / "absent.txt"], vocab_size=50, cache_dir=tmp_path)


def test_save_and_load_tokenizers(spm_model: Path, tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    tok = SentencePieceTokenizer(spm_model)
    saved = save_tokenizer(tok, run)
    assert (run / spm_model.name).read_bytes() == spm_model.read_bytes()
    loaded = load_tokenizer(saved, run)
    assert isinstance(loaded, SentencePieceTokenizer) and loaded.kind == tok.kind
    assert loaded.tokenize("Zwei Hunde spielen.") == tok.tokenize("Zwei Hunde spielen.")
    assert isinstance(load_tokenizer(save_tokenizer(WordTokenizer(), run), run), WordTokenizer)
    assert isinstance(load_tokenizer(CharTokenizer().to_dict(), run), CharTokenizer)


def test_load_tokenizer_errors(tmp_path: Path) -> None:
    with pytest.raises(CheckpointError) as err:
        load_tokenizer({"kind": "bpe", "model": "spm.model"}, tmp_path)
    assert str(err.value) == (f"{tmp_path / 'spm.model'}: no such file (the bpe tokenizer model of run {tmp_path})")
    with pytest.raises(CheckpointError, match=r"unknown tokenizer kind 'moses'"):
        load_tokenizer({"kind": "moses"}, tmp_path)


def test_not_a_model(tmp_path: Path) -> None:
    fake = tmp_path / "fake.model"
    fake.write_bytes(b"not a model")
    with pytest.raises(DataError, match=r"fake\.model: not a SentencePiece model"):
        SentencePieceTokenizer(fake)
