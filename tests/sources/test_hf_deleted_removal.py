"""`scored_hf(removal="delete")`: a removed token is gone from the input, as if the text never had it."""

import pytest
import torch

pytest.importorskip("transformers")


def test_deleted_tokens_give_the_text_without_them(hf_folder):
    from attnkit.sources.hf.load import load
    from attnkit.sources.hf.scored import scored_hf
    from attnkit.sources.source import HfSource

    hf = load(str(hf_folder("bert")))
    text = "the dog sat on the mat ."
    e = scored_hf(HfSource(hf), text, removal="delete")
    assert e.tokens == text.split()
    keep = torch.tensor([[True, False, True, True, False, True, True], [False] * 7, [True] * 7])  # (3, T): two lengths and a full batch
    shorter = ["the sat on mat .", "", text]
    c = int(e.label.split()[1])
    expected = []
    for words in shorter:
        enc = hf.tokenizer(words, return_tensors="pt")
        with torch.no_grad():
            expected.append(float(hf.model(**enc).logits[0].double().softmax(-1)[c]))
    assert torch.allclose(e.predict(keep), torch.tensor(expected, dtype=torch.float64), atol=1e-6)
    assert e.predict(keep)[2].item() == pytest.approx(e.p, abs=1e-6)
