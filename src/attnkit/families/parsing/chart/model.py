"""The self-attentive chart parser (Kitaev & Klein 2018, "Constituency Parsing with a Self-Attentive Encoder").

A sentence is ``<s> w_1 ... w_n </s>``. Each token's input is two partitions (sec. 3): its
content, the word embedding plus a character-level representation (a bi-LSTM over its characters,
whose final states are concatenated; sec. 5.1), and its position, a learned embedding p_t,
concatenated, not added: x_t = [w_t ; p_t]. The encoder is a Transformer whose every projection
keeps the two partitions apart (the factored model, sec. 3): queries, keys and values are computed
per partition, q = [q^(c) ; q^(p)] and so on, so that the attention logits are

    q . k = q^(c) . k^(c) + q^(p) . k^(p)

(content attends by content, position by position, and the two only add), and the outputs of the
heads and of the feed-forward sublayers are computed per partition as well; layer normalisation
here is per partition too (`FactoredAttention`, `FactoredLayer`).

Spans are read off fenceposts (sec. 2.1): the encoder output y_t is split into halves [f_t ; b_t]
(the even and the odd features, so each half holds content and position), and span (i, j) of
fenceposts 0 <= i < j <= n is

    r_ij = [f_j - f_i ; b_{i+1} - b_{j+1}]

with its label scores from a 2-layer MLP, s(i, j, .) = M_2 relu(LayerNorm(M_1 r_ij + c_1)) + c_2,
the empty label's score fixed at 0 (sec. 2.2). `chart.cky` finds the best tree, and the margin
loss max(0, max_T [s(T) + Delta(T, T*)] - s(T*)) trains it (`chart.task.margin_loss`). A linear
tagger on y predicts the POS tags that EVALB needs (as the seq2seq parser's `model.tagger`).
"""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn
from torch.nn.utils.rnn import pack_padded_sequence

from attnkit.attention.masks import masked_softmax


class FeatureDropout(nn.Module):
    """Dropout of whole features: the same features are zeroed at every position of a sentence."""

    def __init__(self, p: float) -> None:
        super().__init__()
        self.p = p

    def forward(self, x: Tensor) -> Tensor:
        if not self.training or self.p == 0:
            return x
        keep = torch.empty(x.size(0), 1, x.size(2), device=x.device, dtype=x.dtype).bernoulli_(1 - self.p)  # (B, 1, D)
        return x * keep / (1 - self.p)


class FactoredAttention(nn.Module):
    """Multi-head self-attention over [content ; position] inputs kept apart (module docstring).

    Args:
        d_content: Width of the content partition (the first `d_content` features).
        d_position: Width of the position partition (the rest).
        n_heads: Heads H.
        d_kv: Per-head query/key/value width, half of it content and half position.
        dropout: Dropout on the attention weights.
    """

    def __init__(self, d_content: int, d_position: int, n_heads: int, d_kv: int, dropout: float = 0.0) -> None:
        super().__init__()
        self.d_content, self.n_heads, self.half = d_content, n_heads, d_kv // 2
        self.scale = 1 / math.sqrt(2 * self.half)
        self.qkv_c = nn.Linear(d_content, 3 * n_heads * self.half, bias=False)  # W_Q^(c), W_K^(c), W_V^(c)
        self.qkv_p = nn.Linear(d_position, 3 * n_heads * self.half, bias=False)  # W_Q^(p), W_K^(p), W_V^(p)
        self.out_c = nn.Linear(n_heads * self.half, d_content, bias=False)  # W_O^(c)
        self.out_p = nn.Linear(n_heads * self.half, d_position, bias=False)  # W_O^(p)
        self.dropout = nn.Dropout(dropout)

    def project(self, x: Tensor) -> tuple[Tensor, ...]:
        """x (B, T, D) -> q_c, k_c, v_c, q_p, k_p, v_p, each (B, H, T, d_kv/2): content ones from
        the content features only, position ones from the position features only."""
        B, T, _ = x.shape
        c = self.qkv_c(x[..., : self.d_content]).view(B, T, 3, self.n_heads, self.half).permute(2, 0, 3, 1, 4)  # (3, B, H, T, d)
        p = self.qkv_p(x[..., self.d_content :]).view(B, T, 3, self.n_heads, self.half).permute(2, 0, 3, 1, 4)  # (3, B, H, T, d)
        return (*c.unbind(0), *p.unbind(0))

    def logits(self, x: Tensor) -> tuple[Tensor, Tensor]:
        """The two terms of the attention logits, content . content and position . position (B, H, T, T), scaled."""
        q_c, k_c, _, q_p, k_p, _ = self.project(x)
        return q_c @ k_c.transpose(-1, -2) * self.scale, q_p @ k_p.transpose(-1, -2) * self.scale

    def forward(self, x: Tensor, keep: Tensor) -> tuple[Tensor, Tensor]:
        """x (B, T, D), keep (B, T) -> (output (B, T, D) = [content ; position], weights (B, H, T, T))."""
        q_c, k_c, v_c, q_p, k_p, v_p = self.project(x)
        scores = (q_c @ k_c.transpose(-1, -2) + q_p @ k_p.transpose(-1, -2)) * self.scale  # (B, H, T, T)
        weights = masked_softmax(scores, keep[:, None, None, :])  # (B, H, T, T)
        attend = self.dropout(weights)
        B, T = x.shape[:2]
        content = (attend @ v_c).transpose(1, 2).reshape(B, T, -1)  # (B, T, H*d): values of content only
        position = (attend @ v_p).transpose(1, 2).reshape(B, T, -1)  # (B, T, H*d)
        return torch.cat([self.out_c(content), self.out_p(position)], dim=-1), weights  # (B, T, D)


class Factored(nn.Module):
    """One module per partition, applied to its features: [f_c(x_c) ; f_p(x_p)]."""

    def __init__(self, d_content: int, content: nn.Module, position: nn.Module) -> None:
        super().__init__()
        self.d_content, self.content, self.position = d_content, content, position

    def forward(self, x: Tensor) -> Tensor:
        return torch.cat([self.content(x[..., : self.d_content]), self.position(x[..., self.d_content :])], dim=-1)  # (B, T, D)


def _ffn(d: int, d_ff: int, relu_dropout: float) -> nn.Module:
    return nn.Sequential(nn.Linear(d, d_ff), nn.ReLU(), nn.Dropout(relu_dropout), nn.Linear(d_ff, d))


class FactoredLayer(nn.Module):
    """A post-norm encoder layer, every part factored: x = LN(x + Attn(x)); x = LN(x + FFN(x))."""

    def __init__(self, d_content: int, d_position: int, n_heads: int, d_kv: int, d_ff: int, *,
                 dropout: float, attention_dropout: float, relu_dropout: float) -> None:  # fmt: skip
        super().__init__()
        self.attention = FactoredAttention(d_content, d_position, n_heads, d_kv, attention_dropout)
        self.norm_attention = Factored(d_content, nn.LayerNorm(d_content), nn.LayerNorm(d_position))
        self.ffn = Factored(d_content, _ffn(d_content, d_ff // 2, relu_dropout), _ffn(d_position, d_ff // 2, relu_dropout))
        self.norm_ffn = Factored(d_content, nn.LayerNorm(d_content), nn.LayerNorm(d_position))
        self.dropout = FeatureDropout(dropout)

    def forward(self, x: Tensor, keep: Tensor) -> tuple[Tensor, Tensor]:
        """x (B, T, D), keep (B, T) -> (x (B, T, D), attention weights (B, H, T, T))."""
        attended, weights = self.attention(x, keep)
        x = self.norm_attention(x + self.dropout(attended))  # (B, T, D)
        return self.norm_ffn(x + self.dropout(self.ffn(x))), weights


class CharLSTM(nn.Module):
    """A word's characters -> [forward final state ; backward final state] of a bi-LSTM (d_out)."""

    def __init__(self, n_chars: int, d_char: int, d_out: int) -> None:
        super().__init__()
        self.embed = nn.Embedding(n_chars, d_char, padding_idx=0)
        self.lstm = nn.LSTM(d_char, d_out // 2, batch_first=True, bidirectional=True)

    def forward(self, chars: Tensor, lengths: Tensor) -> Tensor:
        """chars (N, C) char ids, lengths (N,) >= 1 -> (N, d_out)."""
        packed = pack_padded_sequence(self.embed(chars), lengths.cpu(), batch_first=True, enforce_sorted=False)
        _, (final, _) = self.lstm(packed)  # (2, N, d_out/2)
        return torch.cat([final[0], final[1]], dim=-1)  # (N, d_out)


class ChartParser(nn.Module):
    """Embeddings, the factored encoder, span scores and the tagger (module docstring).

    Args:
        n_words, n_chars, n_labels, n_tags: Vocabulary sizes (labels include the empty label 0;
            n_tags 0: no tagger).
        d_model: Width D; the content and the position partitions have D/2 each.
        layers, n_heads, d_kv, d_ff: The encoder's.
        d_char: Character embedding width.
        d_label_hidden: The label MLP's hidden width.
        dropout: Residual (feature) dropout; attention_dropout, relu_dropout, embedding_dropout the others.
        max_positions: Positions with a learned embedding (the longest sentence + 2).
        words: Add word embeddings to the character representations.
    """

    def __init__(self, *, n_words: int, n_chars: int, n_labels: int, n_tags: int, d_model: int, layers: int, n_heads: int, d_kv: int,
                 d_ff: int, d_char: int, d_label_hidden: int, dropout: float, attention_dropout: float, relu_dropout: float,
                 embedding_dropout: float, max_positions: int, words: bool) -> None:  # fmt: skip
        super().__init__()
        self.d_content = d_position = d_model // 2
        self.word_embed = nn.Embedding(n_words, self.d_content, padding_idx=0) if words else None
        self.chars = CharLSTM(n_chars, d_char, self.d_content)
        self.position_embed = nn.Embedding(max_positions, d_position)  # p_t
        self.embedding_dropout = FeatureDropout(embedding_dropout)
        self.norm_content = nn.LayerNorm(self.d_content)
        self.layers = nn.ModuleList(
            FactoredLayer(self.d_content, d_position, n_heads, d_kv, d_ff, dropout=dropout, attention_dropout=attention_dropout, relu_dropout=relu_dropout)
            for _ in range(layers)
        )
        self.label_mlp = nn.Sequential(nn.Linear(d_model, d_label_hidden), nn.LayerNorm(d_label_hidden), nn.ReLU(), nn.Linear(d_label_hidden, n_labels - 1))
        self.tagger = nn.Linear(d_model, n_tags) if n_tags else None
        for p in self.position_embed.parameters():
            nn.init.normal_(p, std=0.02)

    def embed(self, tokens: Tensor, chars: Tensor, char_lengths: Tensor, keep: Tensor) -> Tensor:
        """tokens (B, T), chars (B, T, C), char_lengths (B, T), keep (B, T) -> x (B, T, D) = [content ; position]."""
        B, T = tokens.shape
        content = tokens.new_zeros(B, T, self.d_content, dtype=self.position_embed.weight.dtype)  # (B, T, D/2)
        content[keep] = self.chars(chars[keep], char_lengths[keep]).to(content.dtype)  # (N, D/2) per real token
        if self.word_embed is not None:
            content = content + self.word_embed(tokens)
        content = self.norm_content(self.embedding_dropout(content))
        position = self.position_embed(torch.arange(T, device=tokens.device)).expand(B, T, -1)  # (B, T, D/2)
        return torch.cat([content, position], dim=-1)  # (B, T, D)

    def encode(self, tokens: Tensor, chars: Tensor, char_lengths: Tensor, keep: Tensor) -> tuple[Tensor, list[Tensor]]:
        """The encoder output y (B, T, D) and each layer's attention weights (B, H, T, T)."""
        x = self.embed(tokens, chars, char_lengths, keep)
        maps = []
        for layer in self.layers:
            x, weights = layer(x, keep)
            maps.append(weights)
        return x, maps

    def span_scores(self, y: Tensor, pairs: Tensor) -> Tensor:
        """y (B, T, D), pairs (P, 2) fenceposts (i, j), i < j <= T-2 -> s(i, j, l) (B, P, L), s(., ., 0) = 0."""
        f, b = y[..., 0::2], y[..., 1::2]  # (B, T, D/2): [f_t ; b_t]
        i, j = pairs[:, 0], pairs[:, 1]  # (P,)
        r = torch.cat([f[:, j] - f[:, i], b[:, i + 1] - b[:, j + 1]], dim=-1)  # (B, P, D): r_ij
        scores = self.label_mlp(r)  # (B, P, L-1)
        return torch.cat([scores.new_zeros(*scores.shape[:2], 1), scores], dim=-1)  # (B, P, L)

    def tag_logits(self, y: Tensor) -> Tensor:
        """y (B, T, D) -> tag logits (B, T, n_tags)."""
        assert self.tagger is not None
        return self.tagger(y)
