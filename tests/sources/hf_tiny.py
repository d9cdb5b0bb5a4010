"""Tiny random-weight Hugging Face models, built here from their configs and saved as
`save_pretrained` saves them (safetensors), with a WordPiece tokenizer built by `tokenizers`.

The vocabulary splits "cats" into "ca ##t ##s", so `--words` has pieces to merge. Ids 0-2 are
<pad>, </s>, <s>, as the T5/Marian/BART configs below name them.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

transformers = pytest.importorskip("transformers")

from tokenizers import Tokenizer, models, pre_tokenizers, processors  # noqa: E402

SPECIALS = ["<pad>", "</s>", "<s>", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
WORDS = ["the", "a", "ca", "##t", "##s", "dog", "sat", "on", "mat", "ran", "and", "hello", "world", ".", ","]
VOCAB = {w: i for i, w in enumerate(SPECIALS + WORDS)}
TINY = {"vocab_size": len(VOCAB), "pad_token_id": 0}
TEXT = "the cats sat on the mat ."
# What each architecture's tokenizer adds around a text.
TEMPLATES = {"bert": ("[CLS] $A [SEP]", ["[CLS]", "[SEP]"]), "seq2seq": ("$A </s>", ["</s>"]), "plain": (None, [])}


def tokenizer(template: str):
    """A WordPiece PreTrainedTokenizerFast with the specials of `TEMPLATES[template]`."""
    tok = Tokenizer(models.WordPiece(VOCAB, unk_token="[UNK]", continuing_subword_prefix="##"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    single, specials = TEMPLATES[template]
    if single:
        tok.post_processor = processors.TemplateProcessing(single=single, special_tokens=[(s, VOCAB[s]) for s in specials])
    return transformers.PreTrainedTokenizerFast(
        tokenizer_object=tok, unk_token="[UNK]", pad_token="<pad>", eos_token="</s>", bos_token="<s>", cls_token="[CLS]", sep_token="[SEP]",
        mask_token="[MASK]",
    )  # fmt: skip


SEQ2SEQ = {**TINY, "eos_token_id": 1, "bos_token_id": 2, "decoder_start_token_id": 0, "forced_eos_token_id": None}
ENC_DEC = {"d_model": 16, "encoder_layers": 2, "decoder_layers": 2, "encoder_attention_heads": 4, "decoder_attention_heads": 4,
           "encoder_ffn_dim": 32, "decoder_ffn_dim": 32, "max_position_embeddings": 32}  # fmt: skip
BERTISH = {"hidden_size": 16, "num_hidden_layers": 2, "num_attention_heads": 4, "intermediate_size": 32, "max_position_embeddings": 32}

# name -> (config class, its arguments, model class, tokenizer template)
SPECS = {
    "bert": ("BertConfig", {**TINY, **BERTISH, "num_labels": 3}, "BertForSequenceClassification", "bert"),
    "bert-mlm": ("BertConfig", {**TINY, **BERTISH}, "BertForMaskedLM", "bert"),
    "roberta": ("RobertaConfig", {**TINY, **BERTISH, "max_position_embeddings": 40}, "RobertaModel", "bert"),
    "deberta": ("DebertaV2Config", {**TINY, **BERTISH}, "DebertaV2Model", "bert"),  # its attention bypasses transformers' interface
    "distilbert": (
        "DistilBertConfig",
        {**TINY, "dim": 16, "n_layers": 2, "n_heads": 4, "hidden_dim": 32, "max_position_embeddings": 32},
        "DistilBertModel",
        "bert",
    ),  # fmt: skip
    "gpt2": ("GPT2Config", {**TINY, "n_embd": 16, "n_layer": 2, "n_head": 4, "n_positions": 32}, "GPT2LMHeadModel", "plain"),
    "llama": (
        "LlamaConfig",
        {
            **TINY,
            "hidden_size": 16,
            "num_hidden_layers": 2,
            "num_attention_heads": 4,
            "num_key_value_heads": 2,
            "intermediate_size": 32,
            "max_position_embeddings": 32,
            "head_dim": 4,
        },
        "LlamaForCausalLM",
        "plain",
    ),  # fmt: skip
    "marian": ("MarianConfig", {**SEQ2SEQ, **ENC_DEC}, "MarianMTModel", "seq2seq"),
    "bart": ("BartConfig", {**SEQ2SEQ, **ENC_DEC}, "BartForConditionalGeneration", "seq2seq"),
    "t5": (
        "T5Config",
        {**SEQ2SEQ, "d_model": 16, "d_kv": 4, "num_heads": 4, "num_layers": 2, "num_decoder_layers": 2, "d_ff": 32, "relative_attention_num_buckets": 8},
        "T5ForConditionalGeneration",
        "seq2seq",
    ),  # fmt: skip
    "vit": (
        "ViTConfig",
        {"image_size": 32, "patch_size": 8, "hidden_size": 16, "num_hidden_layers": 2, "num_attention_heads": 4, "intermediate_size": 32, "num_labels": 3},
        "ViTForImageClassification",
        None,
    ),  # fmt: skip
}


def build(name: str, folder: Path, seed: int = 0) -> Path:
    """Save the tiny model `name` (SPECS) with its tokenizer or image processor into `folder`."""
    config_class, kwargs, model_class, template = SPECS[name]
    transformers.utils.logging.disable_progress_bar()
    config = getattr(transformers, config_class)(**kwargs)
    torch.manual_seed(seed)
    model = getattr(transformers, model_class)(config)
    if name == "gpt2":  # GPT-2's init leaves the attention near uniform; sharpen it so the test compares real maps
        with torch.no_grad():
            for p in model.parameters():
                p.mul_(8.0)
    model.save_pretrained(folder, safe_serialization=True)
    if template is None:
        transformers.ViTImageProcessor(size={"height": 32, "width": 32}).save_pretrained(folder)
    else:
        tokenizer(template).save_pretrained(folder)
    return folder
