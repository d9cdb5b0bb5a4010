"""The attention JSONL format and the heatmap writer."""

import json

import pytest
import torch

from attnkit.errors import DataError
from attnkit.viz.export import attention_record, read_attention_jsonl, write_attention_jsonl
from attnkit.viz.heatmap import plot_attention


def test_jsonl_round_trip(tmp_path):
    weights = torch.tensor([[0.25, 0.75], [1.0, 0.0]])
    path = tmp_path / "a.jsonl"
    write_attention_jsonl(path, [attention_record(0, ["a", "</s>"], ["x", "</s>"], weights, -1.5)])
    (record,) = read_attention_jsonl(path)
    assert record == {"id": 0, "src": ["a", "</s>"], "tgt": ["x", "</s>"], "attention": [[0.25, 0.75], [1.0, 0.0]], "score": -1.5}
    assert not list(tmp_path.glob(".*.tmp"))


def test_bad_jsonl_names_file_and_line(tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps({"id": 0}) + "\n{oops\n")
    with pytest.raises(DataError, match=r"bad.jsonl, line 2: not JSON"):
        list(read_attention_jsonl(path))


def test_heatmap_png(tmp_path):
    path = plot_attention(torch.eye(3), ["a", "b", "c"], ["x", "y", "z"], tmp_path / "h.png", title="t")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
