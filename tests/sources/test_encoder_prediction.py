"""An encoder's page says what an encoder predicts (issue 62): the fill of the masked token for a masked
language model, the class for a sequence classifier, nothing for an encoder without a head; never
"next token", which is a causal language model's (tiny random-weight models built from their configs, `hf_tiny`)."""

from __future__ import annotations

import pytest
import torch
from hf_tiny import TEXT

from attnkit.sources import open_source
from attnkit.sources.page import page_record


def test_a_masked_language_model_shows_the_fill_of_its_mask(hf_folder):
    source = open_source(str(hf_folder("bert-mlm")))
    text = TEXT.replace("mat", "[MASK]")
    record = page_record(source, text)
    tok, model = source.hf.tokenizer, source.hf.model
    ids = tok(text, return_tensors="pt")["input_ids"]  # (1, T)
    with torch.no_grad():
        logits = model(input_ids=ids).logits  # (1, T, V)
    (at,) = (ids[0] == tok.mask_token_id).nonzero().flatten().tolist()
    assert record["text"] == f"[MASK] = {tok.convert_ids_to_tokens(int(logits[0, at].argmax()))}"
    assert page_record(source, TEXT)["text"] == ""  # no mask: nothing to fill


@pytest.mark.parametrize("name, starts", [("bert", "class: "), ("roberta", ""), ("gpt2", "next token: ")])
def test_what_each_model_predicts(hf_folder, name, starts):
    text = page_record(open_source(str(hf_folder(name))), TEXT)["text"]
    assert text.startswith(starts) and (starts or text == "")
    assert "next token" not in text or name == "gpt2"
