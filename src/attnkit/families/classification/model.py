"""Structured self-attentive sentence embedding as a classifier (Lin et al., 2017, "A Structured
Self-attentive Sentence Embedding", ICLR).

    H = (h_1 .. h_n),  h_t = [LSTM_fwd(w_t, h_{t-1}); LSTM_bwd(w_t, h_{t+1})]   (n, 2u)   Sec. 2.1
    A = softmax(W_s2 tanh(W_s1 H^T))                                           (r, n)    Sec. 2.1
    M = A H                                                                    (r, 2u)   Sec. 2.1
    y = MLP(flatten(M))                     logits over the classes (mlp_hidden = 0: one linear layer)
    loss = CE(y, label) + coef * ||A A^T - I||_F^2  (batch mean)                         Sec. 2.2

A, M and the penalty are computed by `attnkit.attention.structured` (written once there); this
module adds the word embedding, the packed bi-LSTM, the classifier and the baselines:

- ``pooling="mean"`` averages H over the real tokens; with ``encoder="none"`` (H = the word
  embeddings) that is the bag-of-embeddings baseline.
- ``pooling="last"`` takes the bi-LSTM's final states [h_fwd at the last real token; h_bwd at the
  first], the last-state baseline. It needs ``encoder="bilstm"``.
- ``encoder="transformer"`` replaces the bi-LSTM by ``layers`` pre-norm layers of the Transformer
  encoder (`attnkit.models.transformer.EncoderLayer`, Vaswani et al. 2017) over the word embeddings
  plus sinusoidal positions, with a final LayerNorm: H (n, E). With ``need_weights`` each layer's
  self-attention (B, heads, S, S) comes back in `SentenceOutput.encoder`, the layers that attention
  rollout and flow compose (Abnar & Zuidema 2020). The embeddings are not scaled by sqrt(E): they
  start at unit variance (nn.Embedding's N(0, 1)), the scale the paper's scaling gives its.

Sentence pairs (entailment, the paper's appendix): premise and hypothesis go through the same
encoder. ``pair="factor"`` is the paper's multiplicative interaction per hop i,
F_h[i] = M_h[i] W_fh[i], F_p[i] = M_p[i] W_fp[i], F_r = F_h * F_p (element-wise), flattened into
the MLP; ``pair="concat"`` feeds [u; v; |u - v|; u * v] of the flattened embeddings u (premise) and
v (hypothesis). A pooled vector counts as one hop. ``pair="attend"`` is Jain & Wallace's (2019) entailment model:
one additive attention over the premise's states whose query is the hypothesis's final bi-LSTM state q,
a = softmax(v^T tanh(W q + U h_t)) (`attnkit.attention.additive`), and the MLP reads [a H; q].
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, get_args

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from attnkit.attention.additive import AdditiveAttention
from attnkit.attention.positional import SinusoidalPositionalEncoding
from attnkit.attention.structured import StructuredSelfAttention, frobenius_penalty
from attnkit.data.text import iter_text_lines
from attnkit.errors import DataError
from attnkit.families.classification.codec import SentenceVocabs
from attnkit.families.classification.config import SentenceRun
from attnkit.models.dropout import Dropout
from attnkit.models.transformer import EncoderLayer

Encoder = Literal["bilstm", "transformer", "none"]
Pooling = Literal["attention", "mean", "last"]
Pair = Literal["none", "factor", "concat", "attend"]


@dataclass
class SentenceOutput:
    """What `SelfAttentiveClassifier.forward` returns; ``*2`` fields are the hypothesis' in pair mode.

    Attributes:
        logits: ``(B, C)`` class scores.
        attention: A ``(B, R, S)`` of the (first) sentence; ``None`` unless ``pooling="attention"``.
        embedding: M ``(B, R, 2u)`` with attention pooling, else the pooled vector ``(B, 2u)``
            (``(B, embed_dim)`` with ``encoder="none"``).
        attention2: A of the second sentence ``(B, R, S2)``, or ``None``.
        embedding2: Embedding of the second sentence, or ``None``.
        encoder: Each Transformer layer's self-attention ``(B, heads, S, S)`` over the (first)
            sentence, first layer first; empty without ``need_weights`` or ``encoder="transformer"``.
    """

    logits: Tensor
    attention: Tensor | None
    embedding: Tensor
    attention2: Tensor | None = None
    embedding2: Tensor | None = None
    encoder: list[Tensor] = field(default_factory=list)


def check_options(encoder: str, pooling: str, pair: str, r: int) -> None:
    """ValueError for an encoder, pooling or pair mode the classifier does not have, or one that needs another."""
    for name, value, kind in (("encoder", encoder, Encoder), ("pooling", pooling, Pooling), ("pair", pair, Pair)):
        if value not in get_args(kind):
            raise ValueError(f"{name} must be one of {', '.join(get_args(kind))}, not {value!r}")
    if pooling == "last" and encoder != "bilstm":
        raise ValueError("pooling='last' takes the bi-LSTM's final states and needs encoder='bilstm'")
    if pair == "attend" and (encoder, pooling, r) != ("bilstm", "attention", 1):
        raise ValueError("pair='attend' is one attention over a bi-LSTM's states: encoder='bilstm', pooling='attention', r=1")


class SelfAttentiveClassifier(nn.Module):
    """Word embedding -> bi-LSTM -> r-hop structured self-attention -> MLP (module docstring).

    u = 300, d_a = 350, r = 30 and an MLP with 3000 hidden units are the paper's settings for its
    sentiment task (Yelp); the other defaults are ours.

    Args:
        vocab_size: Number of word ids ``V``.
        num_classes: Number of classes ``C``.
        embed_dim: Word embedding width.
        u: LSTM hidden units per direction (H has width 2u).
        d_a: Hidden width of the attention MLP (W_s1 is d_a x 2u).
        r: Number of attention hops (W_s2 is r x d_a).
        mlp_hidden: Hidden units of the output MLP; 0: one linear layer (Jain & Wallace's classifier).
        dropout: Dropout before each layer of the output MLP.
        word_dropout: In training, replace each word by ``unk_id`` with this probability.
        encoder: ``"bilstm"``, ``"transformer"`` (module docstring), or ``"none"`` for H = the word embeddings.
        pooling: ``"attention"`` (the paper), ``"mean"`` or ``"last"`` (baselines).
        pair: ``"none"`` (one sentence), ``"factor"``, ``"concat"`` or ``"attend"`` (sentence pairs).
        d_f: Factor width of ``pair="factor"`` (default: the width of H).
        pad_id: Padding id; its embedding row stays zero.
        unk_id: Unknown-word id, for word dropout.
        layers: Transformer encoder layers (``encoder="transformer"``).
        heads: Attention heads per Transformer layer (they divide ``embed_dim``).
        d_ff: Hidden width of each Transformer layer's feed-forward network.
        encoder_dropout: Dropout inside the Transformer layers (after each sub-layer and on the inputs).
    """

    def __init__(
        self,
        *,
        vocab_size: int,
        num_classes: int,
        embed_dim: int = 300,
        u: int = 300,
        d_a: int = 350,
        r: int = 30,
        mlp_hidden: int = 3000,
        dropout: float = 0.5,
        word_dropout: float = 0.0,
        encoder: Encoder = "bilstm",
        pooling: Pooling = "attention",
        pair: Pair = "none",
        d_f: int | None = None,
        pad_id: int = 0,
        unk_id: int = 1,
        layers: int = 2,
        heads: int = 4,
        d_ff: int = 600,
        encoder_dropout: float = 0.1,
    ) -> None:
        super().__init__()
        check_options(encoder, pooling, pair, r)
        self.pooling, self.pair = pooling, pair
        self.word_dropout, self.unk_id = word_dropout, unk_id
        self.embedding = nn.Embedding(vocab_size, embed_dim, padding_idx=pad_id)
        self.lstm = nn.LSTM(embed_dim, u, batch_first=True, bidirectional=True) if encoder == "bilstm" else None
        self.layers = None
        if encoder == "transformer":
            if embed_dim % heads:
                raise ValueError(f"encoder='transformer': heads ({heads}) must divide embed_dim ({embed_dim})")
            self.positions = SinusoidalPositionalEncoding(embed_dim)
            self.input_dropout = Dropout(encoder_dropout)
            self.layers = nn.ModuleList(EncoderLayer(embed_dim, heads, d_ff, encoder_dropout, 0.0, pre_norm=True) for _ in range(layers))
            self.final_norm = nn.LayerNorm(embed_dim)
        width = 2 * u if encoder == "bilstm" else embed_dim  # width of H
        self.attention = StructuredSelfAttention(width, d_a, r) if pooling == "attention" else None
        self.attention = AdditiveAttention(width, width, d_a) if pair == "attend" else self.attention  # q attends over the premise's H
        hops = r if pooling == "attention" else 1
        features = hops * width
        if pair == "factor":
            d_f = d_f or width
            bound = width**-0.5  # nn.Linear's default init for a (width -> d_f) map per hop
            self.w_fp = nn.Parameter(torch.empty(hops, width, d_f).uniform_(-bound, bound))  # (R, 2u, F)
            self.w_fh = nn.Parameter(torch.empty(hops, width, d_f).uniform_(-bound, bound))  # (R, 2u, F)
            features = hops * d_f
        elif pair in ("concat", "attend"):
            features = 4 * hops * width if pair == "concat" else 2 * width  # [u; v; |u - v|; u * v], or [a H; q]
        self.classifier = nn.Sequential(
            Dropout(dropout), nn.Linear(features, mlp_hidden), nn.ReLU(),
            Dropout(dropout), nn.Linear(mlp_hidden, num_classes),
        ) if mlp_hidden else nn.Sequential(Dropout(dropout), nn.Linear(features, num_classes))  # fmt: skip

    def embed(self, tokens: Tensor, keep: Tensor, need_weights: bool = False) -> tuple[Tensor, Tensor | None, list[Tensor]]:
        """Embed a batch of sentences; padding never changes the result.

        Args:
            tokens: Word ids ``(B, S)``.
            keep: ``(B, S)``, True on real tokens; every row has at least one.
            need_weights: Return the Transformer layers' self-attention (else an empty list).

        Returns:
            ``(M (B, R, 2u), A (B, R, S))`` with attention pooling, else ``(pooled (B, 2u), None)``; then each
            Transformer layer's self-attention ``(B, heads, S, S)`` (`SentenceOutput.encoder`).
        """
        h, last, maps = self.states(tokens, keep, need_weights)  # (B, S, 2u), (B, 2u) or None
        match self.pooling:
            case "attention":
                return *self.attention(h, keep), maps  # (B, R, 2u), (B, R, S)
            case "mean":
                weights = keep.unsqueeze(-1).to(h.dtype)  # (B, S, 1)
                return (h * weights).sum(dim=1) / weights.sum(dim=1), None, maps  # (B, 2u)
            case _:  # "last"
                return last, None, maps  # (B, 2u)

    def states(self, tokens: Tensor, keep: Tensor, need_weights: bool = False) -> tuple[Tensor, Tensor | None, list[Tensor]]:
        """H (B, S, 2u) (or (B, S, E)), the bi-LSTM's final states [h_fwd; h_bwd] (B, 2u) (None for other
        encoders) and the Transformer layers' self-attention, of word ids `tokens` (B, S) (`embed`'s arguments)."""
        if self.training and self.word_dropout:
            drop = torch.rand(tokens.shape, device=tokens.device) < self.word_dropout  # (B, S)
            tokens = tokens.masked_fill(drop & keep, self.unk_id)  # (B, S)
        x = self.embedding(tokens)  # (B, S, E)
        if self.layers is not None:
            h, maps = self.transform(x, keep, need_weights)  # (B, S, E)
            return h, None, maps
        if self.lstm is None:
            return x, None, []  # (B, S, E)
        lengths = keep.sum(dim=1).cpu()  # (B,)
        packed = pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False)  # (sum of lengths, E)
        out, (h_n, _) = self.lstm(packed)  # h_n (2, B, u): forward, backward final states
        h, _ = pad_packed_sequence(out, batch_first=True, total_length=tokens.size(1))  # (B, S, 2u)
        return h, torch.cat([h_n[0], h_n[1]], dim=-1), []  # (B, S, 2u), (B, 2u)

    def transform(self, x: Tensor, keep: Tensor, need_weights: bool) -> tuple[Tensor, list[Tensor]]:
        """The Transformer encoder over word embeddings x (B, S, E): (H (B, S, E), each layer's weights (B, heads, S, S))."""
        x = self.input_dropout(self.positions(x))  # (B, S, E)
        mask = keep[:, None, None, :]  # (B, 1, 1, S)
        maps = []
        for layer in self.layers:
            x, weights = layer(x, mask, need_weights)  # (B, S, E), (B, heads, S, S) or None
            if need_weights:
                maps.append(weights)
        return self.final_norm(x), maps  # (B, S, E)

    def forward(self, tokens: Tensor, keep: Tensor, tokens2: Tensor | None = None, keep2: Tensor | None = None,
                need_weights: bool = False) -> SentenceOutput:  # fmt: skip
        """Classify sentences, or (premise, hypothesis) pairs when the model has a pair mode.

        Args:
            tokens: Word ids ``(B, S)`` (the premise in pair mode).
            keep: ``(B, S)``, True on real tokens.
            tokens2: Hypothesis word ids ``(B, S2)``; required in pair mode, else not allowed.
            keep2: ``(B, S2)``, True on real hypothesis tokens.
            need_weights: Also return the Transformer layers' self-attention of the (first) sentence.

        Returns:
            `SentenceOutput` with logits ``(B, C)``.
        """
        if self.pair == "none" and tokens2 is not None:
            raise ValueError("pair='none': this model classifies single sentences, got a second one")
        if self.pair != "none" and (tokens2 is None or keep2 is None):
            raise ValueError(f"pair={self.pair!r}: needs the hypothesis (tokens2 and keep2)")
        if self.pair == "attend":
            h, _, _ = self.states(tokens, keep)  # (B, S, 2u): the premise first, as embedding hooks expect
            _, q, _ = self.states(tokens2, keep2)  # q (B, 2u)
            m, a = self.attention(q.unsqueeze(1), h, h, keep.unsqueeze(1))  # (B, 1, 2u), (B, 1, S)
            return SentenceOutput(self.classifier(torch.cat([m.flatten(1), q], dim=-1)), a, m, None, q)  # logits (B, C)
        m, a, maps = self.embed(tokens, keep, need_weights)  # (B, R, 2u) or (B, 2u); (B, R, S) or None
        if tokens2 is None:
            return SentenceOutput(self.classifier(m.flatten(1)), a, m, encoder=maps)  # logits (B, C)
        m2, a2, _ = self.embed(tokens2, keep2)  # (B, R, 2u) or (B, 2u); (B, R, S2) or None
        return SentenceOutput(self.classifier(self._pair_features(m, m2)), a, m, a2, m2, maps)  # logits (B, C)

    def _pair_features(self, m_p: Tensor, m_h: Tensor) -> Tensor:
        """MLP input for a premise embedding M_p and a hypothesis embedding M_h (module docstring)."""
        if self.pair == "factor":
            m_p = m_p.reshape(m_p.size(0), -1, m_p.size(-1))  # (B, R, 2u); a pooled vector is one hop
            m_h = m_h.reshape(m_h.size(0), -1, m_h.size(-1))  # (B, R, 2u)
            f_p = torch.einsum("brd,rdf->brf", m_p, self.w_fp)  # F_p = M_p W_fp per hop, (B, R, F)
            f_h = torch.einsum("brd,rdf->brf", m_h, self.w_fh)  # F_h = M_h W_fh per hop, (B, R, F)
            return (f_h * f_p).flatten(1)  # F_r = F_h * F_p, (B, R * F)
        u, v = m_p.flatten(1), m_h.flatten(1)  # (B, R * 2u) each
        return torch.cat([u, v, (u - v).abs(), u * v], dim=-1)  # (B, 4 * R * 2u)

    def loss(self, output: SentenceOutput, labels: Tensor, coef: float) -> Tensor:
        """Cross entropy plus ``coef`` times the batch mean of P = ||A A^T - I||_F^2 (Sec. 2.2).

        In pair mode both sentences' A are penalised. Without attention pooling the penalty is 0.

        Args:
            output: What `forward` returned.
            labels: Class ids ``(B,)``.
            coef: Penalty coefficient (0 turns the penalty off).

        Returns:
            The scalar loss.
        """
        loss = F.cross_entropy(output.logits, labels)  # ()
        for a in (output.attention, output.attention2):
            if a is not None and coef:
                loss = loss + coef * frobenius_penalty(a).mean()  # ()
        return loss


def load_word_vectors(path: str | Path, vocab_tokens: Sequence[str], embedding: nn.Embedding) -> int:
    """Copy pre-trained vectors from a word2vec or GloVe *text* file into the matching rows.

    Lines are ``word v_1 ... v_d`` separated by single spaces, optionally after a word2vec header
    line ``count d``; the file's dimension (from the header or the first vector) must equal the
    embedding's. A word may contain spaces (GloVe 840B has a few): the last d fields are the
    vector. Values are parsed only for words in the vocabulary; the padding row stays as it is.

    Args:
        path: Plain or ``.gz`` UTF-8 file (``~`` is the home folder).
        vocab_tokens: The token of each embedding row, in id order.
        embedding: The embedding to fill in place.

    Returns:
        How many vocabulary tokens got a vector (the first vector wins for a repeated word).

    Raises:
        DataError: Unreadable file, invalid UTF-8, a dimension other than the embedding's, a line
            with too few values or a value that is not a number (with file and line).
    """
    path = Path(path).expanduser()
    dim = embedding.embedding_dim
    rows = {token: i for i, token in enumerate(vocab_tokens) if i != embedding.padding_idx}
    found: set[int] = set()
    file_dim = None
    for number, line in iter_text_lines(path, strip=False):
        fields = line.strip().split(" ")
        if fields == [""]:
            continue
        is_header = number == 1 and len(fields) == 2 and all(f.isdigit() for f in fields)  # "count dim"
        if file_dim is None:
            file_dim = int(fields[1]) if is_header else len(fields) - 1
            if file_dim != dim:
                raise DataError(f"{path}, line {number}: vectors of dimension {file_dim}, the embedding has {dim}")
        if is_header:
            continue
        if len(fields) < dim + 1:
            raise DataError(f"{path}, line {number}: {len(fields) - 1} values, expected a word and {dim} values")
        i = rows.get(" ".join(fields[:-dim]))
        if i is None or i in found:
            continue
        try:
            vector = [float(value) for value in fields[-dim:]]
        except ValueError as err:
            raise DataError(f"{path}, line {number}: malformed vector ({err})") from None
        with torch.no_grad():
            embedding.weight[i] = embedding.weight.new_tensor(vector)  # (E,)
        found.add(i)
    return len(found)


def build(run: SentenceRun, vocabs: SentenceVocabs) -> SelfAttentiveClassifier:
    """The classifier of `run.model`: words in (the run's vocabulary), classes out (its labels)."""
    cfg = run.model
    return SelfAttentiveClassifier(
        vocab_size=len(vocabs.vocab),
        num_classes=len(vocabs.labels),
        embed_dim=cfg.embed_dim,
        u=cfg.u,
        d_a=cfg.d_a,
        r=cfg.r,
        mlp_hidden=cfg.mlp_hidden,
        dropout=cfg.dropout,
        word_dropout=cfg.word_dropout,
        encoder=cfg.encoder,
        pooling=cfg.pooling,
        pair=cfg.pair,
        layers=cfg.layers,
        heads=cfg.heads,
        d_ff=cfg.d_ff,
        encoder_dropout=cfg.encoder_dropout,
    )
