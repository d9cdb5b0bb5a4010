"""Show, Attend and Tell with deterministic soft attention (Xu et al., 2015, ICML), over a CNN grid.

    a = {a_1 .. a_P}, a_i in R^D     annotation vectors: encoder cells, a learned 1x1 projection,
                                     optionally a SAGAN self-attention block (Zhang et al. 2019)
    h_0 = tanh(f_init,h(mean_i a_i)),  c_0 = tanh(f_init,c(mean_i a_i))           Sec. 3.1.2
    e_ti = f_att(a_i, h_{t-1}) = w^T tanh(W_a a_i + W_h h_{t-1})                  eq. 4
    alpha_ti = softmax_i(e_ti) over all P cells                                    eq. 5
    beta_t = sigmoid(f_beta(h_{t-1})),  z_t = beta_t sum_i alpha_ti a_i            Sec. 4.2.1
    h_t, c_t = LSTM([E y_{t-1}; z_t], (h_{t-1}, c_{t-1}))                          eq. 1-3
    p(y_t | a, y_{t-1}) = softmax(L_o dropout(E y_{t-1} + L_h h_t + L_z z_t))      eq. 7
    penalty = sum_i (1 - sum_t alpha_ti)^2   (doubly stochastic, times lambda)     eq. 14

`attention="mean"` is the ablation with the mean annotation vector as a fixed context z_t (still
gated). The attention itself is `attnkit.attention.spatial.SpatialAttention`. The model follows the
decoding protocol (`encode`, `init_state`, `step`) of `attnkit.decode`; the "source" it encodes is
the encoder's grid ``(B, P, C)`` with an all-True keep mask over the P cells.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor, nn

from attnkit.attention.conv_block import ConvSelfAttention
from attnkit.attention.spatial import SpatialAttention
from attnkit.data.vocab import PAD
from attnkit.decode.beam_state import per_sentence
from attnkit.families.captioning.codec import CaptionVocabs
from attnkit.families.captioning.config import CaptionRun
from attnkit.families.captioning.encoders import build_encoder, grid_features
from attnkit.models.dropout import Dropout


@dataclass
class CaptionState:
    """The decoder state between steps: R = B*K rows (K beams of B images; K = 1 outside beam search).

    The annotations are one row per image, shared by its K beams (`per_sentence()` fields): a
    search never copies them per beam or reorders them per step.
    """

    h: Tensor  # (R, H)
    c: Tensor  # (R, H)
    features: Tensor = per_sentence()  # a (B, P, D)
    projected: Tensor | None = per_sentence()  # W_a a_i (B, P, A); None for the mean-context ablation


@dataclass
class Annotations:
    """`encode`'s output: the annotation vectors and the self-attention weights (if a block is on)."""

    features: Tensor  # (B, P, D)
    self_attention: Tensor | None  # (B, P, P)


class ShowAttendTell(nn.Module):
    """Encoder grid -> annotation vectors -> soft-attention LSTM decoder (module docstring).

    Args:
        vocab_size: V.
        encoder: the image CNN (``(B, 3, H, W) -> (B, C, gh, gw)``).
        encoder_channels: C.
        grid: gh = gw.
        feature_dim: D, the annotation width after the 1x1 projection.
        self_attention: number of `ConvSelfAttention` blocks on the annotation map (0 or 1).
        attention: ``"soft"`` or ``"mean"`` (fixed mean context).
        positions: add a learned embedding per cell to the annotations.
        embed_dim, hidden_dim, attn_dim: m (word embedding), n (LSTM), and f_att's hidden width.
        dropout: dropout on the deep output layer's input.
    """

    def __init__(self, *, vocab_size: int, encoder: nn.Module, encoder_channels: int, grid: int, feature_dim: int = 512,
                 self_attention: int = 0, attention: str = "soft", positions: bool = False, embed_dim: int = 256,
                 hidden_dim: int = 512, attn_dim: int = 256, dropout: float = 0.5) -> None:  # fmt: skip
        super().__init__()
        if attention not in ("soft", "mean"):
            raise ValueError(f"attention must be 'soft' or 'mean', not {attention!r}")
        self.encoder, self.grid = encoder, grid
        self.project = nn.Linear(encoder_channels, feature_dim)
        self.position = nn.Parameter(torch.zeros(grid * grid, feature_dim)) if positions else None
        self.blocks = nn.ModuleList(ConvSelfAttention(feature_dim) for _ in range(self_attention))
        self.init_h = nn.Linear(feature_dim, hidden_dim)
        self.init_c = nn.Linear(feature_dim, hidden_dim)
        self.attend = SpatialAttention(hidden_dim, feature_dim, attn_dim) if attention == "soft" else None
        self.f_beta = nn.Linear(hidden_dim, 1)
        self.embedding = nn.Embedding(vocab_size, embed_dim, padding_idx=PAD)
        self.lstm = nn.LSTMCell(embed_dim + feature_dim, hidden_dim)
        self.l_h = nn.Linear(hidden_dim, embed_dim)
        self.l_z = nn.Linear(feature_dim, embed_dim)
        self.l_o = nn.Linear(embed_dim, vocab_size)
        self.dropout = Dropout(dropout)

    def image_grid(self, images: Tensor) -> Tensor:
        """The encoder's cells of normalised images: ``(B, 3, H, W)`` -> ``(B, P, C)``."""
        return grid_features(self.encoder, images)  # (B, P, C)

    def annotate(self, cells: Tensor) -> Annotations:
        """Annotation vectors a of encoder cells ``(B, P, C)``: projection, positions, self-attention."""
        a = self.project(cells)  # (B, P, D)
        if self.position is not None:
            a = a + self.position  # (B, P, D)
        weights = None
        for block in self.blocks:
            b, p, d = a.shape
            y, weights = block(a.transpose(1, 2).reshape(b, d, self.grid, self.grid))  # (B, D, gh, gw), (B, P, P)
            a = y.flatten(2).transpose(1, 2)  # (B, P, D)
        return Annotations(a, weights)

    def encode(self, src: Tensor, src_keep: Tensor) -> Tensor:
        """Decoding protocol: encoder cells ``(B, P, C)`` (all kept) -> annotations a ``(B, P, D)``."""
        return self.annotate(src.to(self.project.weight.dtype)).features  # (B, P, D)

    def init_state(self, memory: Tensor, src_keep: Tensor | None = None) -> CaptionState:
        """h_0, c_0 from the mean annotation vector through f_init,h and f_init,c (Sec. 3.1.2)."""
        mean = memory.mean(dim=1)  # (B, D)
        projected = self.attend.project_features(memory) if self.attend is not None else None  # (B, P, A)
        return CaptionState(torch.tanh(self.init_h(mean)), torch.tanh(self.init_c(mean)), memory, projected)

    def context(self, state: CaptionState) -> tuple[Tensor, Tensor]:
        """z_t = beta_t sum_i alpha_ti a_i and alpha_t from h_{t-1}: ``(R, D)``, ``(R, P)``.

        The K = R / B rows of an image query its annotations together, as K queries of one row.
        """
        a = state.features  # (B, P, D)
        (B, P, D), R = a.shape, state.h.size(0)
        if self.attend is None:
            alpha = a.new_full((R, P), 1.0 / P)  # (R, P)
            z = a.mean(dim=1).repeat_interleave(R // B, dim=0)  # (R, D)
        else:
            z, alpha = self.attend(state.h.view(B, R // B, -1), a, projected_features=state.projected)  # (B, K, D), (B, K, P)
            z, alpha = z.reshape(R, D), alpha.reshape(R, P)  # (R, D), (R, P)
        beta = torch.sigmoid(self.f_beta(state.h))  # (R, 1)
        return beta * z, alpha  # (R, D), (R, P)

    def advance(self, embedded: Tensor, state: CaptionState) -> tuple[Tensor, CaptionState, Tensor]:
        """One LSTM step on E y_{t-1} ``(R, E)``: the deep output's input ``(R, E)``, the state, alpha_t ``(R, P)``."""
        z, alpha = self.context(state)  # (R, D), (R, P)
        h, c = self.lstm(torch.cat([embedded, z], dim=-1), (state.h, state.c))  # (R, H) each
        out = embedded + self.l_h(h) + self.l_z(z)  # (R, E)
        return out, CaptionState(h, c, state.features, state.projected), alpha

    def step(self, prev_tokens: Tensor, state: CaptionState) -> tuple[Tensor, CaptionState, Tensor]:
        """Decoding protocol: y_{t-1} ``(R, 1)`` -> (logits ``(R, V)``, state, alpha_t ``(R, P)``)."""
        embedded = self.embedding(prev_tokens.long().squeeze(1))  # (R, E)
        out, state, alpha = self.advance(embedded, state)  # (R, E), state, (R, P)
        return self.l_o(self.dropout(out)), state, alpha  # (R, V)

    def forward(self, memory: Tensor, tokens_in: Tensor) -> tuple[Tensor, Tensor]:
        """Teacher forcing: annotations ``(N, P, D)``, inputs BOS y_1 .. ``(N, T)`` -> deep-output
        inputs ``(N, T, E)`` (project with `logits`) and alpha ``(N, T, P)``."""
        state = self.init_state(memory)
        embedded = self.embedding(tokens_in)  # (N, T, E)
        outs, alphas = [], []
        for t in range(tokens_in.size(1)):
            out, state, alpha = self.advance(embedded[:, t], state)  # (N, E), state, (N, P)
            outs.append(out)
            alphas.append(alpha)
        return torch.stack(outs, dim=1), torch.stack(alphas, dim=1)  # (N, T, E), (N, T, P)

    def logits(self, out: Tensor) -> Tensor:
        """p(y_t) scores from the deep output's input (any leading shape, ``(..., E) -> (..., V)``)."""
        return self.l_o(self.dropout(out))  # (..., V)


def doubly_stochastic(alpha: Tensor, keep: Tensor) -> Tensor:
    """sum_i (1 - sum_t alpha_ti)^2 per caption (Xu et al. eq. 14), over its real steps ``keep``.

    Args:
        alpha: ``(N, T, P)``.
        keep: ``(N, T)`` bool, True on the caption's steps (words and EOS).

    Returns:
        ``(N,)``.
    """
    total = (alpha * keep.unsqueeze(-1).to(alpha.dtype)).sum(dim=1)  # (N, P)
    return ((1.0 - total) ** 2).sum(dim=-1)  # (N,)


def build(run: CaptionRun, vocabs: CaptionVocabs) -> ShowAttendTell:
    """The captioner of `run.model` with the encoder the run trained (`vocabs.encoder`)."""
    cfg = run.model
    encoder, channels = build_encoder(vocabs.encoder, cfg.cnn_layers, cfg.cnn_channels)
    grid = cfg.input_size // (32 if vocabs.encoder == "lite0" else 2**cfg.cnn_layers)
    return ShowAttendTell(vocab_size=len(vocabs.vocab), encoder=encoder, encoder_channels=channels, grid=grid,
                          feature_dim=cfg.feature_dim, self_attention=cfg.self_attention, attention=cfg.attention,
                          positions=cfg.positions, embed_dim=cfg.embed_dim, hidden_dim=cfg.hidden_dim, attn_dim=cfg.attn_dim,
                          dropout=cfg.dropout)  # fmt: skip
