"""Labelled-text readers: TSV/CSV/JSONL columns and their one-line errors, label maps, SST trees
(sentences, phrases, SST-2), the flat SST file, SNLI and its split by premise, and encoding."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
import torch

from attnkit.data.batching import pad as pad_ids
from attnkit.data.vocab import UNK
from attnkit.errors import DataError
from attnkit.families.classification.codec import build_vocab, encode_examples, normalize
from attnkit.families.classification.data import (
    SNLI_LABELS,
    SST2_LABELS,
    SST5_LABELS,
    LabelledText,
    LabelMap,
    parse_sst_tree,
    read_labelled,
    read_snli,
    read_sst_trees,
    read_sst_tsv,
    split_by_premise,
)

SHARED = Path(__file__).resolve().parents[4] / "shared/data"  # the shared data folder beside the checkout


def write(path: Path, text: str | bytes) -> Path:
    if path.suffix == ".gz":
        with gzip.open(path, "wb") as handle:
            handle.write(text.encode() if isinstance(text, str) else text)
    elif isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


def test_tsv_pairs_and_the_label_map_built_from_the_data(tmp_path):
    path = write(tmp_path / "pairs.tsv.gz", 'id\tp\th\ty\n1\tA "quoted" man.\tA man.\tyes\n\n2\tDogs run.\t Cats sit. \tno\n')
    examples, labels = read_labelled(path, text_column="p", text2_column="h", label_column="y")
    assert examples == [LabelledText('A "quoted" man.', "yes", "A man."), LabelledText("Dogs run.", "no", "Cats sit.")]
    assert labels.labels == ("no", "yes")  # sorted
    assert LabelMap.from_json(json.loads(json.dumps(labels.to_json()))) == labels
    assert labels.index("yes") == 1 and "maybe" not in labels


def test_csv_quoting_and_jsonl_numbers(tmp_path):
    csv_path = write(tmp_path / "a.csv", 'label,sentence\npos,"Good, really good."\nneg,Bad.\n')
    examples, _ = read_labelled(csv_path, text_column="sentence", label_column="label")
    assert [(e.text, e.label) for e in examples] == [("Good, really good.", "pos"), ("Bad.", "neg")]
    jsonl = write(tmp_path / "a.jsonl", '{"text": "Fine.", "stars": 4}\n\n{"text": "Awful.", "stars": 1}\n')
    examples, labels = read_labelled(jsonl, text_column="text", label_column="stars", label_map=LabelMap(["1", "4"]))
    assert [(e.text, e.label) for e in examples] == [("Fine.", "4"), ("Awful.", "1")] and labels == LabelMap(["1", "4"])


@pytest.mark.parametrize(
    "name, text, message",
    [
        ("a.tsv", "sentence\tlabel\nhi\tpos\n", r"a\.tsv, line 1: no column 'text' \(the header has sentence, label\)"),
        ("a.tsv", "text\tlabel\nhi\tpos\n \tneg\n", r"a\.tsv, line 3: empty text in column 'text'"),
        ("a.tsv", "text\tlabel\nhi\tpos\tx\n", r"a\.tsv, line 2: 3 fields, the header has 2"),
        ("a.jsonl", '{"text": "hi", "label": "pos"}\n{"label": "neg"}\n', r"a\.jsonl, line 2: no field 'text'"),
        ("a.jsonl", '{"text": "hi", "label": "pos"}\n{"text": "", "label": "neg"}\n', r"a\.jsonl, line 2: empty text"),
        ("a.jsonl", '{"text": "hi", "label": "pos"}\n{"text": "x",\n', r"a\.jsonl, line 2: invalid JSON"),
        ("a.tsv", "text\tlabel\nhi\tpos\nho\tmeh\n", r"a\.tsv, line 3: unknown label 'meh' \(known: neg, pos\)"),
        ("a.tsv", b"text\tlabel\nhi\tpos\nh\xe9\tneg\n", r"a\.tsv, line 3: invalid UTF-8 \(byte 0xe9 at column 2\)"),
        ("a.txt", "text\tlabel\n", r"a\.txt: unknown table format"),
    ],
)
def test_reader_errors_name_file_and_line(tmp_path, name, text, message):
    with pytest.raises(DataError, match=message):
        read_labelled(write(tmp_path / name, text), text_column="text", label_column="label", label_map=LabelMap(["neg", "pos"]))


TREE = r"(3 (2 It) (4 (2 's) (3 (2 a) (4 (3 -LRB-good-RRB-) (2 co\/writer)))))"


def test_sst_tree_nodes_in_pre_order_with_escapes_undone():
    assert parse_sst_tree(TREE) == [
        ("It 's a -LRB-good-RRB- co/writer", 3),  # only whole-token escapes are PTB escapes
        ("It", 2),
        ("'s a -LRB-good-RRB- co/writer", 4),
        ("'s", 2),
        ("a -LRB-good-RRB- co/writer", 3),
        ("a", 2),
        ("-LRB-good-RRB- co/writer", 4),
        ("-LRB-good-RRB-", 3),
        ("co/writer", 2),
    ]
    assert parse_sst_tree("(1 (2 -LRB-) (0 (2 2) (1 -RRB-)))") == [("( 2 )", 1), ("(", 2), ("2 )", 0), ("2", 2), (")", 1)]


@pytest.mark.parametrize(
    "tree, message",
    [
        ("(3 (2 It) (4 film)", r"unbalanced '\('"),
        ("(3 (2 It)) (2 x)", "text after the end of the tree"),
        ("(7 It)", "expected a label 0-4 after '\\(', got '7'"),
        ("(3 (2 It) ())", "expected a label 0-4"),
        ("(3 (2))", "a node without words"),
    ],
)
def test_malformed_trees_are_refused_with_the_line(tmp_path, tree, message):
    path = write(tmp_path / "trees.txt", f"{TREE}\n{tree}\n")
    with pytest.raises(DataError, match=rf"trees\.txt, line 2: {message}"):
        read_sst_trees(path)


def test_sst_sentences_phrases_and_binary(tmp_path):
    path = write(tmp_path / "trees.txt.gz", "(1 (2 A) (1 (1 dull) (2 film)))\n(2 (2 A) (2 film))\n(4 (4 Great) (2 film))\n")
    sentences, labels = read_sst_trees(path)
    assert [(e.text, e.label) for e in sentences] == [("A dull film", "negative"), ("A film", "neutral"), ("Great film", "very_positive")]
    assert labels.labels == SST5_LABELS
    phrases, _ = read_sst_trees(path, phrases=True)  # each distinct text once, first label wins
    assert [e.text for e in phrases] == ["A dull film", "A", "dull film", "dull", "film", "A film", "Great film", "Great"]
    binary, labels = read_sst_trees(path, phrases=True, binary=True)  # neutral nodes dropped
    assert [(e.text, e.label) for e in binary] == [
        ("A dull film", "negative"), ("dull film", "negative"), ("dull", "negative"),
        ("Great film", "positive"), ("Great", "positive"),
    ]  # fmt: skip
    assert labels.labels == SST2_LABELS


def test_flat_sst_file(tmp_path):
    path = write(tmp_path / "sst5.tsv", '__label__1\tBad , "really" .\n__label__3\tOk .\n__label__5\tGreat .\n')
    examples, _ = read_sst_tsv(path)
    assert [(e.text, e.label) for e in examples] == [('Bad , "really" .', "very_negative"), ("Ok .", "neutral"), ("Great .", "very_positive")]
    assert [e.label for e in read_sst_tsv(path, binary=True)[0]] == ["negative", "positive"]
    with pytest.raises(DataError, match=r"sst5\.tsv, line 2: expected '__label__1' \.\. '__label__5'"):
        read_sst_tsv(write(tmp_path / "sst5.tsv", "__label__1\tBad .\n__label__6\tToo good .\n"))


def test_shared_sst_trees_agree_with_the_flat_file():
    trees, tsv = SHARED / "sst/trees_dev.txt.gz", SHARED / "sst/sst5_dev.tsv.gz"
    if not trees.is_file() or not tsv.is_file():
        pytest.skip(f"{SHARED / 'sst'} not available")
    from_trees, from_tsv = read_sst_trees(trees)[0], read_sst_tsv(tsv)[0]
    assert len(from_trees) == len(from_tsv) == 1101  # shared/data/README.md, section 2
    assert [e.label for e in from_trees] == [e.label for e in from_tsv]
    assert sum(a.text == b.text for a, b in zip(from_trees, from_tsv)) >= 1094  # all but a few no-break spaces
    assert len(read_sst_trees(trees, binary=True)[0]) == 872  # the README's SST-2 dev size


def test_snli_original_layout_skips_pairs_without_gold_label(tmp_path):
    path = write(tmp_path / "snli.tsv", "gold_label\tsentence1\tsentence2\nneutral\tA.\tB.\n-\tA.\tC.\ncontradiction\tD.\tE.\n")
    assert read_snli(path) == [LabelledText("A.", "neutral", "B."), LabelledText("D.", "contradiction", "E.")]


def test_shared_snli_split_has_no_premise_on_both_sides():
    path = SHARED / "snli/snli_1.0_dev.tsv.gz"
    if not path.is_file():
        pytest.skip(f"{path} not available")
    examples = read_snli(path)
    assert len(examples) == 9842 and {e.label for e in examples} == set(SNLI_LABELS)  # README, section 3
    train, dev = split_by_premise(examples, dev_fraction=0.1, seed=0)
    assert len(train) + len(dev) == len(examples)
    assert not {e.text for e in train} & {e.text for e in dev}
    assert len({e.text for e in dev}) == round(0.1 * 3319)  # 3,319 distinct premises
    assert split_by_premise(examples, dev_fraction=0.1, seed=0) == (train, dev)  # deterministic


def test_normalize_encode_and_pad():
    assert normalize("Don't stop, Co-Writer!") == "don't stop , co-writer !"
    assert normalize("It 's `` great ''") == "it 's ` ` great ' '"
    examples = [LabelledText("A man sleeps.", "neutral", "A man."), LabelledText("Dogs run!", "entailment", "Dogs.")]
    vocab = build_vocab(examples)
    labels = LabelMap(SNLI_LABELS)
    encoded = encode_examples(examples + [LabelledText("A cat.", "neutral", "Cats!")], vocab, labels)
    assert [vocab.decode(e.ids) for e in encoded[:2]] == [["a", "man", "sleeps", "."], ["dogs", "run", "!"]]
    assert encoded[2].ids[1] == UNK and encoded[0].label == 1 and encoded[1].ids2 == vocab.encode(["dogs", "."])
    tokens, keep = pad_ids([e.ids for e in encoded])
    assert tokens.shape == (3, 4) and keep.tolist() == [[True] * 4, [True] * 3 + [False], [True] * 3 + [False]]
    assert (tokens[~keep] == 0).all() and tokens.dtype == torch.long
    with pytest.raises(DataError, match="example 1: unknown label 'yes'"):
        encode_examples([LabelledText("A.", "yes")], vocab, labels)


def test_drop_symbols_gives_jain_and_wallaces_sst_words():
    # their preprocess/SST/SST.ipynb `tokenize`, applied by hand to these leaves: "-LRB-" removed, "-RRB-" a
    # space, re.sub(r"\W", " ", ...), spaces collapsed, lowercased
    [(text, _), *_] = parse_sst_tree(r"(3 (2 It) (3 (2 's) (3 (2 -LRB-) (3 (2 Élan\/co-writer) (2 -RRB-) (2 does) (2 n't) (2 !)))))")
    assert normalize(text, drop_symbols=True).split() == ["it", "s", "élan", "co", "writer", "does", "n", "t"]
    assert normalize(text).split() == ["it", "'s", "(", "élan", "/", "co-writer", ")", "does", "n't", "!"]  # the default keeps them
    examples = [LabelledText("Don't -- stop!", "neutral"), LabelledText("...", "neutral")]
    vocab = build_vocab(examples, drop_symbols=True)
    encoded = encode_examples(examples, vocab, LabelMap(SNLI_LABELS), drop_symbols=True)
    assert [vocab.decode(e.ids) for e in encoded] == [["don", "t", "stop"]]  # "..." has no word left: dropped


def test_drop_symbols_gives_their_sst_vocabulary_size():
    path = SHARED / "sst/trees_train.txt.gz"
    if not path.is_file():
        pytest.skip(f"{path} not available")
    train, _ = read_sst_trees(path, binary=True)
    # their notebook printed "Vocabulary size :  13826": the training words (min_df 1) and <0>, <UNK>, <SOS>, <EOS>;
    # attnkit's four specials are <pad>, <unk>, <s>, </s>
    assert len(train) == 6920 and len(build_vocab(train, drop_symbols=True)) == 13826
