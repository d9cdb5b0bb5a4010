"""Hugging Face Transformers models as a source of attention (`attnkit attention`, docs/explorer.md).

`load` opens a folder that `save_pretrained` wrote, or a hub id (fetched into huggingface_hub's
cache when online): never with `trust_remote_code`, weights only from safetensors, eager attention
in the model's own dtype. `collect` hooks the attention modules that transformers itself records
for `output_attentions` and hands each layer's weights to a sink as the layer runs; `inputs`
tokenizes the text (or reads the image) and, for an encoder-decoder model, picks the target;
`attribute` scores an output and asks `attnkit.analysis.attribution` for attributions; `export`
ties them together. The hub cache and the safety checks are `attnkit.artifacts.hf`'s, shared with the
translation family's Marian import; `transformers` is optional (`artifacts.hf.require`).
"""
