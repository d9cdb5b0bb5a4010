"""Tests for attnkit.families.translation.data.prepare: the path from files or pairs to encoded examples."""

from __future__ import annotations

from pathlib import Path

import pytest
import sentencepiece as spm

from attnkit.data.text import read_lines
from attnkit.errors import DataError
from attnkit.families.translation.data.prepare import prepare_translation
from attnkit.families.translation.data.synthetic import generate


def write(path: Path, lines: list[str]) -> Path:
    path.write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")
    return path


def test_word_pairs_joint(tmp_path: Path) -> None:
    pairs = generate("reverse", 100, vocab_size=12, min_len=1, max_len=6, seed=0)
    prepared = prepare_translation(
        train=pairs,
        valid=pairs[:10],
        tokenizer="word",
        vocab_size=1000,
        joint=True,
        max_len=5,
        cache_dir=tmp_path,
    )
    assert prepared.src_tokenizer is prepared.tgt_tokenizer
    assert prepared.src_vocab is prepared.tgt_vocab
    assert len(prepared.src_vocab) == 4 + 12
    too_long = sum(len(src.split()) > 5 for src, _ in pairs)
    assert prepared.dropped["train"] == {"empty": 0, "too_long": too_long}
    assert len(prepared.train) == 100 - too_long
    kept = [pair for pair in pairs if len(pair[0].split()) <= 5]
    for (src_ids, tgt_ids), (src, tgt) in zip(prepared.train, kept):
        assert prepared.src_tokenizer.detokenize(prepared.src_vocab.decode(src_ids)) == src
        assert prepared.tgt_tokenizer.detokenize(prepared.tgt_vocab.decode(tgt_ids)) == tgt
    assert prepared.valid_pairs == pairs[:10] and prepared.skipped == {"train": {}, "valid": {}}


def test_char_separate_vocabularies(tmp_path: Path) -> None:
    pairs = [("ab", "xyz"), ("ba", "zz")]
    prepared = prepare_translation(
        train=pairs,
        valid=[],
        tokenizer="char",
        vocab_size=100,
        joint=False,
        max_len=10,
        cache_dir=tmp_path,
    )
    assert prepared.src_vocab.to_json()["tokens"][4:] == ["a", "b"]
    assert prepared.tgt_vocab.to_json()["tokens"][4:] == ["z", "x", "y"]
    assert prepared.train == [([4, 5], [5, 6, 4]), ([5, 4], [4, 4])]


def test_files_are_checked_and_skip_lines_dropped(tmp_path: Path) -> None:
    src = write(tmp_path / "t.src", ["a b", "", "c d", "e f"])
    tgt = write(tmp_path / "t.tgt", ["x y", "z", "   ", "u v"])
    prepared = prepare_translation(
        train=(src, tgt),
        valid=(src, tgt),
        tokenizer="word",
        vocab_size=100,
        joint=False,
        max_len=10,
        cache_dir=tmp_path,
    )
    assert prepared.skipped == {"train": {"blank": 2}, "valid": {"blank": 2}}
    assert prepared.valid_pairs == [("a b", "x y"), ("e f", "u v")]
    assert len(prepared.train) == 2


def test_failed_check_lists_failing_rows_in_one_line(tmp_path: Path) -> None:
    src = write(tmp_path / "t.src", ["a", "b", "c"])
    tgt = tmp_path / "t.tgt"
    tgt.write_bytes(b"x\n\xffy\n")
    with pytest.raises(DataError) as err:
        prepare_translation(
            train=(src, tgt),
            valid=[],
            tokenizer="word",
            vocab_size=100,
            joint=True,
            max_len=10,
            cache_dir=tmp_path,
        )
    assert str(err.value) == (
        f"{src} has 3 lines but {tgt} has 2 (data check: mismatch 1 (first line 3); not_utf8 1 (first line 2); `attnkit data check {src} {tgt}` shows the table)"
    )


def test_warn_policy_keeps_bad_utf8_replaced(tmp_path: Path) -> None:
    src = write(tmp_path / "t.src", ["a", "b"])
    tgt = tmp_path / "t.tgt"
    tgt.write_bytes(b"x\n\xffy\n")
    prepared = prepare_translation(
        train=(src, tgt),
        valid=[],
        tokenizer="word",
        vocab_size=100,
        joint=True,
        max_len=10,
        cache_dir=tmp_path,
        check_policy={"not_utf8": "warn"},
    )
    assert prepared.tgt_vocab.decode(prepared.train[1][1]) == ["\ufffdy"]


def test_empty_corpus(tmp_path: Path) -> None:
    src, tgt = write(tmp_path / "e.src", []), write(tmp_path / "e.tgt", [])
    with pytest.raises(DataError) as err:
        prepare_translation(
            train=(src, tgt),
            valid=[],
            tokenizer="word",
            vocab_size=10,
            joint=True,
            max_len=10,
            cache_dir=tmp_path,
        )
    assert str(err.value) == f"{src}: empty file"
    blank_src, blank_tgt = write(tmp_path / "b.src", ["", ""]), write(tmp_path / "b.tgt", ["x", ""])
    with pytest.raises(DataError) as err:
        prepare_translation(
            train=(blank_src, blank_tgt),
            valid=[],
            tokenizer="word",
            vocab_size=10,
            joint=True,
            max_len=10,
            cache_dir=tmp_path,
        )
    assert str(err.value) == f"no training pairs ({blank_src} / {blank_tgt})"
    with pytest.raises(DataError) as err:
        prepare_translation(
            train=[("a b", "x y")],
            valid=[],
            tokenizer="word",
            vocab_size=10,
            joint=True,
            max_len=1,
            cache_dir=tmp_path,
        )
    assert str(err.value) == "no training examples left after checks and filters (1 given pairs)"


def test_bpe_joint_on_multi30k_slice(m30k_slice: dict[str, Path], tmp_path: Path) -> None:
    prepared = prepare_translation(
        train=(m30k_slice["train.en"], m30k_slice["train.de"]),
        valid=(m30k_slice["val.en"], m30k_slice["val.de"]),
        tokenizer="bpe",
        vocab_size=500,
        joint=True,
        max_len=100,
        cache_dir=tmp_path,
    )
    assert prepared.src_tokenizer is prepared.tgt_tokenizer and len(prepared.src_vocab) == 500
    assert (len(prepared.train), len(prepared.valid), len(prepared.valid_pairs)) == (2000, 200, 200)
    processor = spm.SentencePieceProcessor(model_file=str(prepared.src_tokenizer.model_path))
    de = read_lines(m30k_slice["train.de"])
    assert [tgt for _, tgt in prepared.train[:50]] == [processor.encode(line) for line in de[:50]]
    assert list(tmp_path.glob("spm-bpe-500-*.model")) == [prepared.src_tokenizer.model_path]


def test_unigram_separate_on_multi30k_slice(m30k_slice: dict[str, Path], tmp_path: Path) -> None:
    prepared = prepare_translation(
        train=(m30k_slice["train.en"], m30k_slice["train.de"]),
        valid=(m30k_slice["val.en"], m30k_slice["val.de"]),
        tokenizer="unigram",
        vocab_size=400,
        joint=False,
        max_len=100,
        cache_dir=tmp_path,
    )
    assert prepared.src_tokenizer is not prepared.tgt_tokenizer
    assert prepared.src_tokenizer.kind == prepared.tgt_tokenizer.kind == "unigram"
    assert len(prepared.src_vocab) == len(prepared.tgt_vocab) == 400
    assert prepared.src_vocab != prepared.tgt_vocab
    assert len(list(tmp_path.glob("spm-unigram-400-*.model"))) == 2
