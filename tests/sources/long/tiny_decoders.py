"""Tiny random decoder and encoder models of every architecture the long road covers, with their eager reference.

Each config is small (2 layers, 4 query heads, 2 key/value heads where the architecture groups
them, head size 8) and starts with large enough weights (`initializer_range`) that the attention is
far from uniform, so a wrong mask or a wrong scale shows. Mistral's window (16), Gemma 2's sliding
layers and ModernBERT's local layer (keys within 8 either way) are shorter than the test inputs;
the encoders' learned positions (512) are longer.
"""

from __future__ import annotations

import pytest
import torch

transformers = pytest.importorskip("transformers")

VOCAB = 97
COMMON = {"vocab_size": VOCAB, "initializer_range": 0.25, "bos_token_id": 1, "eos_token_id": 2}
ROTARY = {"hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2, "intermediate_size": 64,
          "max_position_embeddings": 512, "head_dim": 8}  # fmt: skip
# name -> (config class, arguments, model class)
ARCHS = {
    "llama": ("LlamaConfig", ROTARY, "LlamaForCausalLM"),
    "mistral": ("MistralConfig", {**ROTARY, "sliding_window": 16}, "MistralForCausalLM"),
    "qwen2": ("Qwen2Config", ROTARY, "Qwen2ForCausalLM"),
    "phi3": ("Phi3Config", {**ROTARY, "pad_token_id": 0}, "Phi3ForCausalLM"),
    "gpt_neox": (
        "GPTNeoXConfig",
        {"hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 4, "intermediate_size": 64, "max_position_embeddings": 512},
        "GPTNeoXForCausalLM",
    ),  # fmt: skip
    "gpt2": ("GPT2Config", {"n_embd": 32, "n_layer": 2, "n_head": 4, "n_positions": 512}, "GPT2LMHeadModel"),
    "gemma2": ("Gemma2Config", {**ROTARY, "sliding_window": 16, "attn_logit_softcapping": 5.0, "query_pre_attn_scalar": 8}, "Gemma2ForCausalLM"),  # fmt: skip
}
BERTISH = {"hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 4, "intermediate_size": 64, "max_position_embeddings": 512}
# the encoders (bidirectional): name -> (config class, arguments, model class)
ENCODERS = {
    "bert": ("BertConfig", BERTISH, "BertForMaskedLM"),
    "roberta": ("RobertaConfig", {**BERTISH, "pad_token_id": 0}, "RobertaForMaskedLM"),  # positions 1..N (after the pad's)
    "distilbert": ("DistilBertConfig", {"dim": 32, "n_layers": 2, "n_heads": 4, "hidden_dim": 64, "max_position_embeddings": 512}, "DistilBertForMaskedLM"),
    "electra": ("ElectraConfig", {**BERTISH, "embedding_size": 16}, "ElectraForMaskedLM"),
    "albert": ("AlbertConfig", {**BERTISH, "embedding_size": 16}, "AlbertForMaskedLM"),
    "modernbert": (
        "ModernBertConfig",
        {**BERTISH, "global_attn_every_n_layers": 2, "local_attention": 16, "pad_token_id": 0, "cls_token_id": 1, "sep_token_id": 2},
        "ModernBertForMaskedLM",
    ),  # fmt: skip
}


def model(name: str, attn_implementation: str = "eager", seed: int = 0):
    """The tiny model `name` (ARCHS or ENCODERS), random weights from `seed`, in eval mode."""
    config_class, kwargs, model_class = {**ARCHS, **ENCODERS}[name]
    config = getattr(transformers, config_class)(**COMMON, **kwargs)
    config._attn_implementation = attn_implementation
    torch.manual_seed(seed)
    return getattr(transformers, model_class)(config).eval()


def ids(length: int, seed: int = 1) -> torch.Tensor:
    """Random token ids (1, length)."""
    return torch.randint(0, VOCAB, (1, length), generator=torch.Generator().manual_seed(seed))


def eager_attentions(name: str, input_ids: torch.Tensor) -> list[torch.Tensor]:
    """transformers' eager `output_attentions`: per layer (H, N, N)."""
    with torch.inference_mode():
        out = model(name)(input_ids=input_ids, output_attentions=True)
    return [a[0].float() for a in out.attentions]
