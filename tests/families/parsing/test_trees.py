"""Reading PTB trees, preprocessing them as the field does, and the file-based splits."""

from __future__ import annotations

import re
import zipfile

import pytest

from attnkit.errors import DataError
from attnkit.families.parsing.trees import (
    Tree,
    file_number,
    parse_trees,
    preprocess,
    preprocess_treebank,
    read_treebank,
    read_trees,
    spans,
    split_sample,
    split_wsj,
    strip_label,
)

# An NLTK-style tree over several lines: outer unlabelled bracket, function tags, a co-index,
# brackets as -LRB-/-RRB- and a trace whose S is left empty once the trace is removed.
NLTK_STYLE = """( (S
    (NP-SBJ-1 (-LRB- -LRB-) (NNP John) (-RRB- -RRB-) )
    (VP (VBD tried)
      (S (NP-SBJ=2 (-NONE- *-1) ) ))
    (. .) ))
"""


def test_nltk_style_tree_is_read_and_preprocessed():
    (tree,) = parse_trees(NLTK_STYLE)
    assert tree.label == "S"  # the outer unlabelled bracket is gone
    assert tree.words() == ["-LRB-", "John", "-RRB-", "tried", "*-1", "."]
    assert str(preprocess(tree)) == "(S (NP (-LRB- -LRB-) (NNP John) (-RRB- -RRB-)) (VP (VBD tried)) (. .))"


def test_trees_on_one_line_and_across_lines():
    trees = parse_trees("(S (NN a)) (S\n (NN b)\n)\n\n( (X (NN c) ) )")
    assert [str(t) for t in trees] == ["(S (NN a))", "(S (NN b))", "(X (NN c))"]
    assert parse_trees("( (NN a) (NN b) )")[0] == Tree("TOP", (Tree("NN", ("a",)), Tree("NN", ("b",))))


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("(S (NN a))\n(S (NN b)\n", "f.mrg, tree 2 (line 2): unbalanced brackets (1 still open"),
        ("(S (NN a)))", "f.mrg, tree 2 (line 1): unbalanced ')'"),
        ("(S (NN a))\n\n()", "f.mrg, tree 2 (line 3): bracket opened on line 3: empty bracket"),
        ("(S (NN a))\n( \n)", "f.mrg, tree 2 (line 2): bracket opened on line 2: empty bracket"),
        ("(S (NP ) (NN a))", "f.mrg, tree 1 (line 1): bracket opened on line 1: empty bracket (NP)"),
        ("(S (NN a)) word (S (NN b))", "f.mrg, tree 2 (line 1): text 'word' outside brackets"),
        ("(S (NP the (NN dog)))", "f.mrg, tree 1 (line 1): bracket opened on line 1: (NP ...) mixes"),
        ("(S (NN two words))", "f.mrg, tree 1 (line 1): bracket opened on line 1: (NN ...) mixes words"),
        ("(S\n ( (NN a)))", "f.mrg, tree 1 (line 1): bracket opened on line 2: a bracket without a label"),
    ],
)
def test_malformed_trees_name_file_tree_and_line(text, message):
    with pytest.raises(DataError, match="^" + re.escape(message)):
        parse_trees(text, "f.mrg")


def test_a_tree_of_empty_elements_only_has_no_words_after_preprocessing():
    with pytest.raises(DataError, match=r"^wsj_0001.mrg, tree 2: no words left after removing -NONE-"):
        preprocess_treebank({"wsj_0001.mrg": parse_trees("(S (NN a)) (S (NP (-NONE- *T*-1)))")})


@pytest.mark.parametrize(
    ("label", "stripped"),
    [
        ("NP-SBJ-1", "NP"),
        ("NP=2", "NP"),
        ("PP-LOC=3", "PP"),
        ("S-TPC-1", "S"),
        ("NP", "NP"),
        ("-LRB-", "-LRB-"),
        ("-NONE-", "-NONE-"),
        ("PRP$", "PRP$"),
        ("ADVP|PRT", "ADVP|PRT"),
    ],
)
def test_strip_label(label, stripped):
    assert strip_label(label) == stripped


def test_the_sample_has_the_documented_counts(raw_treebank, treebank):
    # shared/data/README.md section 4: 199 files, 3,914 trees, 100,676 preterminals of which
    # 6,592 are -NONE- (94,084 real tokens).
    assert len(raw_treebank) == 199 and sum(map(len, raw_treebank.values())) == 3914
    tags = [tag for trees in raw_treebank.values() for tree in trees for tag in tree.tags()]
    assert len(tags) == 100_676 and tags.count("-NONE-") == 6592
    assert sum(len(tree.words()) for trees in treebank.values() for tree in trees) == 94_084
    labels = {label for trees in treebank.values() for tree in trees for label, _, _ in spans(tree)}
    assert not any("-" in label or "=" in label for label in labels)  # no function tags remain


def test_sample_split_by_file(treebank, splits):
    names = list(treebank)
    assert (names[0], names[-1]) == ("wsj_0001.mrg", "wsj_0199.mrg")
    numbers = {"train": range(1, 180), "dev": range(180, 190), "test": range(190, 200)}
    for part, wanted in numbers.items():
        files = [name for name in names if file_number(name) in wanted]
        assert len(files) == len(wanted)  # 179 / 10 / 10 files
        assert splits[part] == [tree for name in files for tree in treebank[name]]
    assert [len(splits[p]) for p in ("train", "dev", "test")] == [3669, 127, 118]  # counted by this reader


def test_splits_reject_or_skip_files_outside_them():
    tree = parse_trees("(S (NN a))")
    with pytest.raises(DataError, match="wsj_0200.mrg: outside wsj_0001-0199"):
        split_sample({"wsj_0200.mrg": tree})
    with pytest.raises(DataError, match="notes.txt: not a WSJ file name"):
        split_sample({"notes.txt": tree})
    names = ["wsj_0001.mrg", "wsj_0199.mrg", "wsj_0200.mrg", "wsj_2199.mrg", "wsj_2200.mrg", "wsj_2354.mrg", "wsj_2401.mrg"]
    files = {name: [Tree("S", (Tree("NN", (name,)),))] for name in names}
    split = split_wsj(files)  # sections 02-21 / 22 / 23; 00, 01 and 24 are not used
    assert {part: [t.words()[0] for t in trees] for part, trees in split.items()} == {
        "train": ["wsj_0200.mrg", "wsj_2199.mrg"],
        "dev": ["wsj_2200.mrg"],
        "test": ["wsj_2354.mrg"],
    }


def test_read_file_folder_and_zip(tmp_path):
    (tmp_path / "wsj" / "00").mkdir(parents=True)
    (tmp_path / "wsj" / "00" / "wsj_0002.mrg").write_text("( (S (NN b)) )\n")
    (tmp_path / "wsj" / "00" / "wsj_0001.mrg").write_text("(S (NN a))\n(S (NN c))\n")
    (tmp_path / "wsj" / "README").write_text("not a tree")
    with zipfile.ZipFile(tmp_path / "tb.zip", "w") as archive:
        archive.write(tmp_path / "wsj/00/wsj_0001.mrg", "treebank/combined/wsj_0001.mrg")
        archive.writestr("treebank/combined/README", "not a tree")
    folder = read_treebank(tmp_path / "wsj")
    assert {k: [str(t) for t in v] for k, v in folder.items()} == {
        "wsj_0001.mrg": ["(S (NN a))", "(S (NN c))"],
        "wsj_0002.mrg": ["(S (NN b))"],
    }
    assert read_treebank(tmp_path / "tb.zip") == {"wsj_0001.mrg": folder["wsj_0001.mrg"]}
    assert read_trees(tmp_path / "wsj/00/wsj_0002.mrg") == folder["wsj_0002.mrg"]


def test_read_errors_name_the_file(tmp_path):
    with pytest.raises(DataError, match="no such file or folder"):
        read_treebank(tmp_path / "missing")
    (tmp_path / "empty").mkdir()
    with pytest.raises(DataError, match=r"no \*.mrg tree files"):
        read_treebank(tmp_path / "empty")
    (tmp_path / "bad.mrg").write_bytes(b"(S (NN a))\n(S (NN \xff))\n")
    with pytest.raises(DataError, match=r"bad.mrg, line 2: invalid UTF-8 \(byte 0xff\)"):
        read_treebank(tmp_path / "bad.mrg")
    (tmp_path / "open.mrg").write_text("(S (NN a))\n(S\n  (NN b)\n")
    with pytest.raises(DataError, match=r"open.mrg, tree 2 \(line 2\): unbalanced"):
        read_treebank(tmp_path / "open.mrg")


def test_tree_accessors_and_spans():
    (tree,) = parse_trees("(S (NP (DT the) (NN dog)) (VP (VBZ barks)) (. .))")
    assert tree.tagged() == [("the", "DT"), ("dog", "NN"), ("barks", "VBZ"), (".", ".")]
    assert spans(tree) == [("S", 0, 4), ("NP", 0, 2), ("VP", 2, 3)]


def test_a_byte_order_mark_before_the_first_tree_is_no_text(tmp_path):
    """Found by tests/data/test_reader_properties.py: a BOM was 'text outside brackets'."""
    path = tmp_path / "bom.txt"
    path.write_bytes("\ufeff(S (NN a))\r\n(S (NN b))\r\n".encode())
    assert [str(tree) for tree in read_trees(path, suffix=".txt")] == ["(S (NN a))", "(S (NN b))"]
