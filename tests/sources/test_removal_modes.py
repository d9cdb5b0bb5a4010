"""`attnkit faithfulness --removal {delete,mask,pad}`: what a removed word is, checked against the model's own forward
pass on the input written out (the word cut, <unk>, <pad>; a BERT's pad token outside the attention mask)."""

from __future__ import annotations

import json

import pytest
import torch

from attnkit.cli import main
from attnkit.data.vocab import PAD, UNK
from attnkit.errors import AttnkitError
from attnkit.families.classification.infer import model_inputs
from attnkit.sources import open_source

TEXT = "t1 t2 t3 t4 t5"
KEEP = torch.tensor([[True, False, True, True, False], [False] * 5, [True] * 5])  # (3, T): two removed, all removed, none


def p_of(loaded, tokens: list[int], c: int) -> float:
    with torch.no_grad():
        logits = loaded.model(torch.tensor([tokens]), torch.ones(1, len(tokens), dtype=torch.bool)).logits  # (1, C)
    return float(logits[0].double().softmax(-1)[c])


@pytest.mark.parametrize("removal", ["delete", "mask", "pad", None])
def test_a_runs_removed_words(tiny_sase_run, removal):
    source = open_source(str(tiny_sase_run))
    loaded = source.loaded
    (e,) = source.scored_outputs(TEXT, flow=False, truncate=False, removal=removal)
    ids = model_inputs(loaded, TEXT)[0][0].tolist()
    c = int(e.label.split()[1])
    if removal == "delete":
        inputs = [[ids[0], ids[2], ids[3]], [PAD], ids]  # nothing left: one zero row, <pad>'s
    else:
        fill = UNK if removal == "mask" else PAD  # None: pad, the runs' default
        inputs = [[i if k else fill for i, k in zip(ids, row)] for row in KEEP.tolist()]
    expected = torch.tensor([p_of(loaded, t, c) for t in inputs], dtype=torch.float64)
    torch.testing.assert_close(e.predict(KEEP), expected, atol=1e-6, rtol=0)
    assert e.p == pytest.approx(p_of(loaded, ids, c), abs=1e-6)


def test_a_translation_run_cannot_delete_or_mask(tiny_transformer_run):
    source = open_source(str(tiny_transformer_run))
    with pytest.raises(AttnkitError, match="--removal delete: a translation's score reads the source at its length"):
        source.scored_outputs("t1 t2 t3", flow=False, truncate=False, removal="delete")
    with pytest.raises(AttnkitError, match="--removal mask: the model has no word embedding"):
        source.scored_outputs("t1 t2 t3", flow=False, truncate=False, removal="mask")


def test_a_berts_padded_token_is_outside_the_attention_mask(hf_folder):
    pytest.importorskip("transformers")
    source = open_source(str(hf_folder("bert")))
    hf = source.hf
    text = "the dog sat on the mat ."
    (e,) = source.scored_outputs(text, flow=False, truncate=False, removal="pad")
    c = int(e.label.split()[1])
    enc = hf.tokenizer(text, return_tensors="pt")
    ids, mask = enc["input_ids"].clone(), enc["attention_mask"].clone()  # (1, S)
    ids[0, 2], mask[0, 2] = hf.tokenizer.pad_token_id, 0  # token 2 of the text is "dog" (after [CLS])
    with torch.no_grad():
        want = float(hf.model(**{**enc, "input_ids": ids, "attention_mask": mask}).logits[0].double().softmax(-1)[c])
    keep = torch.ones(1, len(e.tokens), dtype=torch.bool)
    keep[0, 1] = False
    assert float(e.predict(keep)[0]) == pytest.approx(want, abs=1e-6)


def test_the_removal_is_a_setting_of_the_command(tiny_sase_run, tmp_path):
    data = tmp_path / "texts.txt"
    data.write_text("t1 t2 t3\nt4 t5\n", encoding="utf-8")
    out = tmp_path / "o"
    assert main(["faithfulness", str(tiny_sase_run), "--input", str(data), "--out", str(out), "--methods", "loo", "--removal", "delete"]) == 0
    header = json.loads((out / "examples.jsonl").read_text(encoding="utf-8").splitlines()[0])
    assert header["settings"]["removal"] == "delete"
    default = tmp_path / "d"
    assert main(["faithfulness", str(tiny_sase_run), "--input", str(data), "--out", str(default), "--methods", "loo"]) == 0
    assert "removal" not in json.loads((default / "examples.jsonl").read_text(encoding="utf-8").splitlines()[0])["settings"]  # files from before resume
    assert (
        main(["faithfulness", str(tiny_sase_run), "--input", str(data), "--out", str(default), "--methods", "loo", "--removal", "mask"]) == 2
    )  # other settings


@pytest.mark.parametrize("model", [{}, {"encoder": "transformer", "pooling": "mean", "layers": 2, "heads": 2, "d_ff": 32}])
def test_a_runs_deletions_are_one_padded_batch_equal_to_each_input_alone(tiny_sase_maker, tmp_path, model):
    """Every deletion of a text (inputs of every length, and none left) is one forward pass, the shorter inputs padded
    under the model's padding mask; each equals the shorter input run alone, in float32, within 1e-6."""
    source = open_source(str(tiny_sase_maker(tmp_path / "run", **model)))
    (e,) = source.scored_outputs("t1 t2 t3 t4 t5 t6 t7", flow=False, truncate=False, removal="delete")
    keep = torch.rand(24, 7, generator=torch.Generator().manual_seed(0)) < 0.5  # (24, 7): inputs of 0 to 7 words
    keep[0], keep[1] = False, True
    calls = []
    handle = source.loaded.model.register_forward_hook(lambda *_: calls.append(1))
    try:
        batched = e.predict(keep)  # (24,)
    finally:
        handle.remove()
    with torch.no_grad():
        alone = [e.f(e.x[row][None] if row.any() else torch.zeros(1, 1, e.x.size(1))).double().exp() for row in keep]  # (1,) each
    assert len(calls) == 1
    torch.testing.assert_close(batched, torch.cat(alone), atol=1e-6, rtol=0)
