"""`attnkit attention` on tiny Hugging Face models: the npz equals what transformers returns with
output_attentions=True, for every kind and layer; rollout, flow, words and attributions."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest
import torch
from hf_tiny import TEXT, transformers

from attnkit.analysis.rollout import cross_rollout, rollout
from attnkit.sources import AttentionOptions, export_attention
from attnkit.viz.words import merge_matrix, word_groups

# attnkit loads with device_map="auto" where accelerate is installed, so on a GPU machine its maps come from CUDA
# while the reference runs on the CPU: 2.6e-6 apart at most on an H200 (benchmarks/cuda_check.py's machine).
ATOL = 1e-5 if torch.cuda.is_available() and importlib.util.find_spec("accelerate") else 1e-6


def _reference(folder, **inputs):
    """transformers' own output_attentions=True (eager), from a fresh load of the folder."""
    config = transformers.AutoConfig.from_pretrained(folder)
    model = getattr(transformers, config.architectures[0]).from_pretrained(folder, attn_implementation="eager").eval()
    with torch.inference_mode():
        return model(**inputs, output_attentions=True)


def _assert_layers(z, kind: str, reference) -> None:
    assert [n for n in z.files if n.startswith(f"{kind}/layer")] == [f"{kind}/layer{l}" for l in range(1, len(reference) + 1)]
    for l, expected in enumerate(reference, 1):
        got = z[f"{kind}/layer{l}"]
        assert got.dtype == np.float32 and got.shape == tuple(expected[0].shape)
        np.testing.assert_allclose(got, expected[0].float().numpy(), atol=ATOL, rtol=0)


@pytest.mark.parametrize(("name", "kind"), [("bert", "encoder"), ("roberta", "encoder"), ("distilbert", "encoder"), ("gpt2", "self"), ("llama", "self")])
def test_text_models_equal_output_attentions(hf_folder, tmp_path, name, kind):
    folder = hf_folder(name)
    summary = export_attention(str(folder), TEXT, tmp_path / "a.npz", AttentionOptions())
    z = np.load(tmp_path / "a.npz")
    tokenizer = transformers.AutoTokenizer.from_pretrained(folder)
    enc = tokenizer(TEXT, return_tensors="pt")
    reference = _reference(folder, **enc).attentions
    assert summary["kinds"] == {kind: 2}
    _assert_layers(z, kind, reference)
    assert list(z["tokens"]) == tokenizer.convert_ids_to_tokens(enc["input_ids"][0].tolist())
    layers = [torch.from_numpy(z[f"{kind}/layer{l}"]) for l in (1, 2)]
    torch.testing.assert_close(torch.from_numpy(z["rollout"]), rollout(layers), atol=1e-6, rtol=1e-5)


def test_llama_grouped_query_attention_has_one_map_per_query_head(hf_folder, tmp_path):
    folder = hf_folder("llama")
    export_attention(str(folder), TEXT, tmp_path / "a.npz", AttentionOptions())
    z = np.load(tmp_path / "a.npz")
    config = transformers.AutoConfig.from_pretrained(folder)
    assert config.num_key_value_heads < config.num_attention_heads
    assert z["self/layer1"].shape[0] == config.num_attention_heads == 4
    assert np.allclose(np.triu(z["self/layer1"], 1), 0)  # causal


@pytest.mark.parametrize("name", ["marian", "t5", "bart"])
def test_encoder_decoder_models_equal_output_attentions_on_a_given_target(hf_folder, tmp_path, name):
    folder = hf_folder(name)
    target = "a dog ran ."
    export_attention(str(folder), TEXT, tmp_path / "a.npz", AttentionOptions(target=target))
    z = np.load(tmp_path / "a.npz")
    tokenizer = transformers.AutoTokenizer.from_pretrained(folder)
    enc = tokenizer(TEXT, return_tensors="pt")
    labels = tokenizer(text_target=target, return_tensors="pt")["input_ids"]  # (1, T): ends with </s>
    decoder_in = torch.cat([torch.zeros_like(labels[:, :1]), labels[:, :-1]], dim=1)  # decoder_start_token_id 0
    out = _reference(folder, **enc, decoder_input_ids=decoder_in)
    _assert_layers(z, "encoder", out.encoder_attentions)
    _assert_layers(z, "decoder_self", out.decoder_attentions)
    _assert_layers(z, "cross", out.cross_attentions)
    assert list(z["target_tokens"]) == tokenizer.convert_ids_to_tokens(decoder_in[0].tolist())
    assert list(z["output_tokens"]) == tokenizer.convert_ids_to_tokens(labels[0].tolist())
    assert list(z["cross/queries"]) == list(z["target_tokens"]) and list(z["cross/keys"]) == list(z["tokens"])
    enc_layers = [torch.from_numpy(z[f"encoder/layer{l}"]) for l in (1, 2)]
    cross_layers = [torch.from_numpy(z[f"cross/layer{l}"]) for l in (1, 2)]
    torch.testing.assert_close(torch.from_numpy(z["rollout"]), cross_rollout(enc_layers, cross_layers), atol=1e-6, rtol=1e-5)
    torch.testing.assert_close(torch.from_numpy(z["rollout_encoder"]), rollout(enc_layers), atol=1e-6, rtol=1e-5)


def test_encoder_decoder_attends_over_its_own_greedy_output(hf_folder, tmp_path):
    folder = hf_folder("marian")
    export_attention(str(folder), TEXT, tmp_path / "a.npz", AttentionOptions(max_new_tokens=6))
    z = np.load(tmp_path / "a.npz")
    tokenizer = transformers.AutoTokenizer.from_pretrained(folder)
    enc = tokenizer(TEXT, return_tensors="pt")
    model = transformers.MarianMTModel.from_pretrained(folder, attn_implementation="eager").eval()
    generated = model.generate(**enc, do_sample=False, num_beams=1, max_new_tokens=6)  # (1, 1 + n)
    assert list(z["target_tokens"]) == tokenizer.convert_ids_to_tokens(generated[0, :-1].tolist())
    assert list(z["output_tokens"]) == tokenizer.convert_ids_to_tokens(generated[0, 1:].tolist())
    with torch.inference_mode():
        out = model(**enc, decoder_input_ids=generated[:, :-1], output_attentions=True)
    _assert_layers(z, "cross", out.cross_attentions)
    _assert_layers(z, "decoder_self", out.decoder_attentions)


def test_vit_patches_equal_output_attentions(hf_folder, image_file, tmp_path):
    folder = hf_folder("vit")
    export_attention(str(folder), None, tmp_path / "a.npz", AttentionOptions(image=str(image_file)))
    z = np.load(tmp_path / "a.npz")
    from PIL import Image

    processor = transformers.AutoImageProcessor.from_pretrained(folder)
    pixels = processor(images=Image.open(image_file).convert("RGB"), return_tensors="pt")["pixel_values"]
    _assert_layers(z, "encoder", _reference(folder, pixel_values=pixels).attentions)
    assert list(z["grid"]) == [4, 4]
    assert list(z["tokens"][:3]) == ["[CLS]", "patch 0,0", "patch 0,1"] and len(z["tokens"]) == 17


def test_words_merge_pieces_as_plot_does(hf_folder, tmp_path):
    folder = hf_folder("bert")
    export_attention(str(folder), TEXT, tmp_path / "pieces.npz", AttentionOptions())
    export_attention(str(folder), TEXT, tmp_path / "words.npz", AttentionOptions(words=True, flow="all"))
    pieces, words = np.load(tmp_path / "pieces.npz"), np.load(tmp_path / "words.npz")
    assert list(pieces["tokens"]) == ["[CLS]", "the", "ca", "##t", "##s", "sat", "on", "the", "mat", ".", "[SEP]"]
    assert list(words["tokens"]) == ["[CLS]", "the", "cats", "sat", "on", "the", "mat", ".", "[SEP]"]
    groups = word_groups(list(pieces["tokens"]), {"[CLS]", "[SEP]"})
    for l in (1, 2):
        expected = merge_matrix(torch.from_numpy(pieces[f"encoder/layer{l}"]), groups, groups)
        np.testing.assert_allclose(words[f"encoder/layer{l}"], expected.numpy(), atol=ATOL)
        np.testing.assert_allclose(words[f"encoder/layer{l}"].sum(-1), 1.0, atol=1e-5)
    expected = merge_matrix(torch.from_numpy(pieces["rollout"]), groups, groups)
    np.testing.assert_allclose(words["rollout"], expected.numpy(), atol=1e-6)
    assert words["flow"].shape == (9, 9) and list(words["flow/rows"]) == list(range(9))
    np.testing.assert_allclose(words["flow"].sum(-1), 1.0, atol=1e-5)


@pytest.mark.parametrize(("name", "what"), [("bert", "class"), ("llama", "next token"), ("marian", "output 0")])
def test_attributions_of_a_chosen_output(hf_folder, tmp_path, name, what):
    pytest.importorskip("captum")
    options = AttentionOptions(attribute=("ixg", "ig"), target="a dog ." if name == "marian" else None)
    summary = export_attention(str(hf_folder(name)), TEXT, tmp_path / "a.npz", options)
    z = np.load(tmp_path / "a.npz")
    assert summary["attributed"].startswith(what) and str(z["attr/output"][0]) == summary["attributed"]
    for method in ("ixg", "ig"):
        assert z[f"attr/{method}"].shape == z["tokens"].shape and np.isfinite(z[f"attr/{method}"]).all()
        assert np.abs(z[f"attr/{method}"]).sum() > 0
    assert float(z["attr/ig_relative_error"]) <= 0.01


def test_the_attributed_score_is_the_models_own(hf_folder):
    """f at the input's own embeddings equals the model's output from its ids (the embedding hook changes nothing)."""
    from attnkit.sources.hf.attribute import score_function
    from attnkit.sources.hf.inputs import prepare
    from attnkit.sources.hf.load import load

    hf = load(str(hf_folder("marian")))
    prep = prepare(hf, TEXT, AttentionOptions(target="a dog ."))
    f, x, _ = score_function(hf, prep, 1)
    with torch.no_grad():
        logits = hf.model(**prep.inputs).logits  # (1, T, V)
        expected = logits[0, 1].log_softmax(-1)[prep.output_ids[1]]
        torch.testing.assert_close(f(x.unsqueeze(0))[0], expected)
