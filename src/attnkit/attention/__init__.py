"""attnkit.attention: the attention library (placeholder exports; full docstring below is final)."""
from attnkit.attention.masks import causal_mask, combine_masks, masked_softmax, padding_mask
from attnkit.attention.multihead import MultiHeadAttention
