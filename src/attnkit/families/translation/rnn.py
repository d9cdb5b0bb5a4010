"""RNN encoder-decoders, the line of models that led to the Transformer.

One encoder (embedding + LSTM/GRU, optionally bidirectional) and one decoder whose `attention`
picks how the source reaches it:

- `none` (Sutskever et al., 2014): only the encoder's final state, through the initial decoder state.
- `context` (Cho et al., 2014): a fixed context vector c (the encoder's final state) fed to the
  decoder RNN and to the output layer at every step.
- `bahdanau` (Bahdanau et al., 2015): the previous decoder state s_{t-1} scores every annotation
  h_i with the additive MLP (`AdditiveAttention`), a_t = softmax(e_t), c_t = sum_i a_{t,i} h_i, and
  s_t = G(y_{t-1}, s_{t-1}, c_t); the output layer sees s_t, c_t and y_{t-1}.
- `luong` (Luong et al., 2015): attention on the current decoder output h_t with a dot, general or
  concat score (`LuongAttention`), the attentional state h~_t = tanh(W_c [c_t; h_t])
  (`AttentionalLayer`) feeds the output layer and, with input feeding, the next step's input.

All decoders share `step` (one token, used by greedy and beam search) and `features` (teacher
forcing over a whole target, the trainer's entry point). With a teacher-forcing ratio below 1 each
step's input is, per sentence, the gold previous token with that probability and otherwise the
model's own greedy prediction (Bengio et al., 2015, scheduled sampling).

Departures, for simplicity: the deep output layer of Bahdanau/Cho is tanh(W_o [s_t; c_t; E y_{t-1}])
instead of a maxout; with a bidirectional encoder each direction has hidden/2 units, so the
annotations have the decoder's width (as OpenNMT's `brnn`); the initial decoder state is a learned
bridge tanh(W_b [h_fwd; h_bwd]) of the encoder's final states, per layer.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from attnkit.attention.additive import AdditiveAttention
from attnkit.attention.luong import AttentionalLayer, LuongAttention
from attnkit.families.translation.rnn_bptt import bahdanau_loop, luong_loop
from attnkit.models.dropout import Dropout
from attnkit.models.dropout import dropout as between_layers
from attnkit.models.maps import AttentionMaps
from attnkit.precision import compute_dtype

AttentionKind = Literal["none", "context", "bahdanau", "luong"]


@dataclass
class RNNState:
    """Decoder state; every tensor has the batch on dim 0 (so beam search can reorder it)."""

    hidden: Tensor  # (B, L, H) decoder RNN hidden state per layer
    cell: Tensor | None  # (B, L, H) LSTM cell state; None for GRU
    feed: Tensor | None  # (B, H) previous attentional state h~_{t-1} (Luong input feeding)
    memory: Tensor  # (B, S, H) encoder annotations
    keys: Tensor | None  # (B, S, A) the source part of the attention score, computed once
    context: Tensor | None  # (B, H) Cho's fixed context vector
    src_keep: Tensor  # (B, S) True on real source tokens


class RNNEncoder(nn.Module):
    """Embedding + (bi)LSTM/GRU over the packed source: annotations (B, S, H) and final states."""

    def __init__(self, embedding: nn.Embedding, cell: str, hidden: int, layers: int, bidirectional: bool, dropout: float) -> None:
        super().__init__()
        rnn = nn.LSTM if cell == "lstm" else nn.GRU
        self.embedding = embedding
        self.dropout = Dropout(dropout)
        self.directions = 2 if bidirectional else 1
        self.rnn = rnn(embedding.embedding_dim, hidden // self.directions, layers, batch_first=True,
                       dropout=dropout if layers > 1 else 0.0, bidirectional=bidirectional)  # fmt: skip

    def forward(self, src: Tensor, src_keep: Tensor) -> tuple[Tensor, list[Tensor]]:
        """src (B, S), src_keep (B, S) -> annotations (B, S, H), final states [(B, L, H)] (h, and c for LSTM)."""
        x = self.dropout(self.embedding(src))  # (B, S, E)
        lengths = src_keep.sum(dim=1).cpu()  # (B,)
        packed = pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False)
        out, final = self.rnn(packed)
        out, _ = pad_packed_sequence(out, batch_first=True, total_length=src.size(1))  # (B, S, H)
        finals = list(final) if isinstance(final, tuple) else [final]  # each (L * dirs, B, H / dirs)
        B = src.size(0)
        # (L * dirs, B, H/dirs) -> (B, L, dirs * H/dirs): forward and backward side by side per layer.
        return out, [f.view(-1, self.directions, B, f.size(-1)).permute(2, 0, 1, 3).reshape(B, -1, self.directions * f.size(-1)) for f in finals]


class RNNSeq2Seq(nn.Module):
    """Encoder-decoder with the decoder variant named by `attention` (module docstring)."""

    def __init__(
        self,
        *,
        src_vocab_size: int,
        tgt_vocab_size: int,
        attention: AttentionKind = "bahdanau",
        score: Literal["dot", "general", "concat"] = "general",
        input_feed: bool = True,
        cell: Literal["lstm", "gru"] = "lstm",
        embed_dim: int = 256,
        hidden: int = 512,
        layers: int = 1,
        bidirectional: bool = True,
        attn_dim: int | None = None,
        dropout: float = 0.2,
        share_embeddings: bool = True,
        tie_output: bool = False,
        pad_id: int = 0,
    ) -> None:
        super().__init__()
        if share_embeddings and src_vocab_size != tgt_vocab_size:
            raise ValueError("share_embeddings needs one joint vocabulary (source and target sizes differ)")
        if tie_output and hidden != embed_dim:
            raise ValueError(f"tie_output needs hidden == embed_dim, got {hidden} and {embed_dim}")
        if bidirectional and hidden % 2:
            raise ValueError(f"a bidirectional encoder needs an even hidden size, got {hidden}")
        self.attention, self.input_feed = attention, input_feed and attention == "luong"
        self.src_embed = nn.Embedding(src_vocab_size, embed_dim, padding_idx=pad_id)
        self.tgt_embed = self.src_embed if share_embeddings else nn.Embedding(tgt_vocab_size, embed_dim, padding_idx=pad_id)
        self.encoder = RNNEncoder(self.src_embed, cell, hidden, layers, bidirectional, dropout)
        self.bridge = nn.ModuleList(nn.Linear(hidden, hidden) for _ in range(2 if cell == "lstm" else 1))
        extra_input = {"none": 0, "context": hidden, "bahdanau": hidden, "luong": hidden if self.input_feed else 0}[attention]
        rnn = nn.LSTM if cell == "lstm" else nn.GRU
        self.rnn = rnn(embed_dim + extra_input, hidden, layers, batch_first=True, dropout=dropout if layers > 1 else 0.0)
        self.dropout = Dropout(dropout)
        match attention:
            case "bahdanau":
                self.attn = AdditiveAttention(hidden, hidden, attn_dim or hidden)
            case "luong":
                self.attn = LuongAttention(hidden, hidden, score, attn_dim)
                self.attentional = AttentionalLayer(hidden, hidden, hidden)
        if attention in ("context", "bahdanau"):
            self.deep_output = nn.Linear(2 * hidden + embed_dim, hidden)  # W_o [s_t; c_t; E y_{t-1}]
        self.output = None if tie_output else nn.Linear(hidden, tgt_vocab_size, bias=False)
        for embed in {self.src_embed, self.tgt_embed}:
            nn.init.uniform_(embed.weight, -0.1, 0.1)
            nn.init.zeros_(embed.weight[pad_id])

    @property
    def output_weight(self) -> Tensor:
        """The output projection (V, H): the target embedding when tied."""
        return self.tgt_embed.weight if self.output is None else self.output.weight

    @property
    def parallel(self) -> bool:
        """Whether teacher forcing can run the decoder RNN over all steps at once."""
        return self.attention in ("none", "context") or (self.attention == "luong" and not self.input_feed)

    @property
    def fused(self) -> bool:
        """Whether teacher forcing runs `rnn_bptt`'s loop, with its hand-written backward: one LSTM
        layer with Bahdanau attention, or with Luong's dot or general score and input feeding."""
        if not isinstance(self.rnn, nn.LSTM) or self.rnn.num_layers != 1:
            return False
        return self.attention == "bahdanau" or (self.input_feed and self.attn.score != "concat" and self.attentional.w_c.bias is None)

    def logits(self, x: Tensor) -> Tensor:
        """Decoder features (..., H) -> vocabulary logits (..., V)."""
        return F.linear(x, self.output_weight)  # (..., V)

    def encode(self, src: Tensor, src_keep: Tensor) -> tuple[Tensor, list[Tensor]]:
        """src (B, S), src_keep (B, S) -> (annotations (B, S, H), final states [(B, L, H)])."""
        return self.encoder(src, src_keep)

    def init_state(self, memory: tuple[Tensor, list[Tensor]], src_keep: Tensor) -> RNNState:
        """The decoder's state before the first step: bridged encoder states, keys computed once."""
        annotations, finals = memory
        initial = [torch.tanh(bridge(f)) for bridge, f in zip(self.bridge, finals)]  # [(B, L, H)]
        B, H = annotations.size(0), annotations.size(2)
        return RNNState(
            hidden=initial[0],
            cell=initial[1] if len(initial) > 1 else None,
            feed=annotations.new_zeros(B, H) if self.input_feed else None,
            memory=annotations,
            keys=self.attn.project_keys(annotations) if self.attention in ("bahdanau", "luong") else None,
            context=finals[0][:, -1] if self.attention == "context" else None,  # (B, H) top layer
            src_keep=src_keep,
        )

    def _embed(self, tokens: Tensor) -> Tensor:
        return self.dropout(self.tgt_embed(tokens))  # (B, T, E)

    def _input_projection(self, emb: Tensor) -> Tensor:
        """The embedding's part of the first layer's gates, W_ih[:, :E] E y + biases: (..., E) -> (..., G).

        It does not depend on the previous step, so teacher forcing computes it for every target
        position in one matrix multiply. The LSTM's two biases are both added here; the GRU's
        recurrent bias stays with W_hh h, inside the reset gate (as in `nn.GRU`).
        """
        E = emb.size(-1)
        bias = self.rnn.bias_ih_l0 + self.rnn.bias_hh_l0 if isinstance(self.rnn, nn.LSTM) else self.rnn.bias_ih_l0
        return F.linear(emb, self.rnn.weight_ih_l0[:, :E], bias)  # (..., G)

    def _cell_weights(self, like: Tensor) -> list[tuple[Tensor, Tensor, Tensor | None, Tensor | None]]:
        """The decoder RNN's weights per layer as `_cell` uses them: (W_x, W_h, b_x, b_h).

        W_x is the first layer's input columns after the embedding's (the rest of its input), the
        whole W_ih above it. Under autocast they are cast once here, as autocast does once per
        forward for a weight it sees: it would cast these slices at every step.
        """
        dtype = compute_dtype(like)
        E, lstm = self.tgt_embed.embedding_dim, isinstance(self.rnn, nn.LSTM)
        layers = []
        for layer in range(self.rnn.num_layers):
            w_ih, w_hh = getattr(self.rnn, f"weight_ih_l{layer}"), getattr(self.rnn, f"weight_hh_l{layer}")
            b_ih, b_hh = getattr(self.rnn, f"bias_ih_l{layer}"), getattr(self.rnn, f"bias_hh_l{layer}")
            w_x = w_ih[:, E:] if layer == 0 else w_ih  # (G, X)
            b_x = None if layer == 0 else (b_ih + b_hh if lstm else b_ih)  # the first layer's are in gates_in
            layers.append((w_x.to(dtype), w_hh.to(dtype), b_x, None if lstm else b_hh))
        return layers

    def _cell(self, gates_in: Tensor, extra: Tensor | None, hidden: Tensor, cell: Tensor | None,
              weights: list[tuple[Tensor, Tensor, Tensor | None, Tensor | None]]) -> tuple[Tensor, Tensor | None]:  # fmt: skip
        """One step of the decoder RNN over all its layers, the equations of `nn.LSTM` / `nn.GRU`
        written out on the module's own weights (`_cell_weights`).

        gates_in (B, G) is `_input_projection` of y_{t-1}; extra (B, X) the rest of the first layer's
        input (a context vector or h~_{t-1}), or None; hidden, cell (B, L, H). Returns the new
        hidden and cell states (B, L, H). One step of `nn.LSTM` goes through oneDNN's sequence
        kernel, whose set-up costs more than this step's arithmetic.
        """
        hs, cs = [], []
        x = None
        for layer, (w_x, w_h, b_x, b_h) in enumerate(weights):
            if layer == 0:
                gx = gates_in if extra is None else torch.addmm(gates_in, extra.to(w_x.dtype), w_x.t())  # (B, G)
            else:
                x = between_layers(x, self.rnn.dropout, self.training)  # between layers, as nn.LSTM
                gx = F.linear(x.to(w_x.dtype), w_x, b_x)  # (B, G)
            h = hidden[:, layer]  # (B, H)
            if cell is None:  # GRU: r, z, n
                gh = F.linear(h.to(w_h.dtype), w_h, b_h)  # (B, 3H)
                xr, xz, xn = gx.chunk(3, dim=-1)
                hr, hz, hn = gh.chunk(3, dim=-1)
                r, z = torch.sigmoid(xr + hr), torch.sigmoid(xz + hz)
                n = torch.tanh(xn + r * hn)
                x = (1 - z) * n + z * h  # (B, H)
            else:  # LSTM: i, f, g, o
                i, f, g, o = torch.addmm(gx, h.to(w_h.dtype), w_h.t()).chunk(4, dim=-1)  # each (B, H)
                c = torch.sigmoid(f) * cell[:, layer] + torch.sigmoid(i) * torch.tanh(g)  # (B, H)
                x = torch.sigmoid(o) * torch.tanh(c)  # (B, H)
                cs.append(c)
            hs.append(x)
        return torch.stack(hs, dim=1), torch.stack(cs, dim=1) if cs else None  # (B, L, H)

    def _attend(self, query: Tensor, state: RNNState) -> tuple[Tensor, Tensor]:
        """query (B, T, H) -> context (B, T, H), weights (B, T, S)."""
        return self.attn(query, state.memory, state.memory, state.src_keep[:, None, :], projected_keys=state.keys)

    def _step(self, gates_in: Tensor, state: RNNState, cell_weights: list) -> tuple[Tensor, Tensor | None, Tensor | None, RNNState]:
        """One decoder step from y_{t-1}'s gate input (B, G), with the RNN's `_cell_weights`.

        Returns the top layer's output, or h~_t for Luong (B, H); the context vector the readout
        needs (B, H) or None; the attention weights (B, S) or None; and the new state.
        """
        extra = context = weights = None
        match self.attention:
            case "context":
                extra = context = state.context  # (B, H)
            case "bahdanau":  # c_t from s_{t-1}, the top layer's previous state
                context, weights = self._attend(state.hidden[:, -1:], state)  # (B, 1, H), (B, 1, S)
                extra, context, weights = context[:, 0], context[:, 0], weights[:, 0]
            case "luong":
                extra = state.feed if self.input_feed else None  # (B, H) h~_{t-1}
        hidden, cell = self._cell(gates_in, extra, state.hidden, state.cell, cell_weights)  # (B, L, H)
        top, feed = hidden[:, -1], None  # (B, H)
        if self.attention == "luong":
            context, weights = self._attend(top[:, None], state)  # (B, 1, H), (B, 1, S)
            top = self.attentional(context, top[:, None])[:, 0]  # (B, H) h~_t
            context, weights = None, weights[:, 0]
            feed = top if self.input_feed else None
        return top, context, weights, RNNState(hidden, cell, feed, state.memory, state.keys, state.context, state.src_keep)

    def _readout(self, top: Tensor, context: Tensor | None, emb: Tensor) -> Tensor:
        """The features before the output projection, (..., H): tanh(W_o [s_t; c_t; E y_{t-1}]) for
        the context and Bahdanau decoders, the decoder output (or h~_t) for the others."""
        if self.attention in ("context", "bahdanau"):
            return torch.tanh(self.deep_output(torch.cat([top, context, emb], dim=-1)))  # (..., H)
        return top

    def _parallel(self, emb: Tensor, state: RNNState) -> tuple[Tensor, Tensor | None]:
        """Teacher forcing in one `nn.LSTM`/`nn.GRU` call when no step needs the previous one's
        output: emb (B, T, E) -> features (B, T, H) and weights (B, T, S) or None."""
        T = emb.size(1)
        context = state.context[:, None].expand(-1, T, -1) if self.attention == "context" else None  # (B, T, H)
        x = emb if context is None else torch.cat([emb, context], dim=-1)  # (B, T, E [+ H])
        h0 = state.hidden.transpose(0, 1).contiguous()  # (L, B, H)
        if state.cell is None:
            out, _ = self.rnn(x, h0)  # (B, T, H)
        else:
            out, _ = self.rnn(x, (h0, state.cell.transpose(0, 1).contiguous()))  # (B, T, H)
        if self.attention != "luong":
            return self._readout(out, context, emb), None
        context, weights = self._attend(out, state)  # (B, T, H), (B, T, S)
        return self.attentional(context, out), weights  # (B, T, H) h~_t

    def _fused(self, emb: Tensor, state: RNNState) -> tuple[Tensor, Tensor | None, Tensor]:
        """Teacher forcing through `rnn_bptt`'s loop: emb (B, T, E) -> the top layer's output, or h~_t
        for Luong (B, T, H); the context vectors (B, T, H) for Bahdanau, else None; weights (B, T, S).
        Matmul operands go in cast to the matmul dtype (autocast's), the weights once."""
        dtype = compute_dtype(emb)
        w = torch.cat([self.rnn.weight_ih_l0[:, emb.size(-1) :], self.rnn.weight_hh_l0], dim=1).to(dtype)  # (4H, X + H)
        gates_in = self._input_projection(emb).to(dtype)  # (B, T, 4H)
        memory, keys = state.memory.to(dtype), state.keys.to(dtype)  # (B, S, H), (B, S, H | A)
        h0, c0 = state.hidden[:, 0], state.cell[:, 0]  # (B, H)
        if self.attention == "luong":
            top, weights = luong_loop(gates_in, h0, c0, w, keys, memory, self.attentional.w_c.weight.to(dtype), state.src_keep)
            return top, None, weights
        w_a, v = self.attn.w_a.weight.to(dtype), self.attn.v_a.weight[0].to(dtype)  # (A, H), (A,)
        return bahdanau_loop(gates_in, h0, c0, w, keys, memory, w_a, v, state.src_keep)

    def _teacher_forced(self, src: Tensor, src_keep: Tensor, tgt_in: Tensor, teacher_forcing: float) -> tuple[Tensor, Tensor | None]:
        """Features (B, T, H) and attention weights (B, T, S) or None over a whole target."""
        state = self.init_state(self.encode(src, src_keep), src_keep)
        emb = self._embed(tgt_in)  # (B, T, E)
        if teacher_forcing >= 1.0 and self.parallel:
            features, weights = self._parallel(emb, state)
            return self.dropout(features), weights
        if teacher_forcing >= 1.0 and self.fused:
            top, context, weights = self._fused(emb, state)
            return self.dropout(self._readout(top, context, emb)), weights
        sampling = teacher_forcing < 1.0
        # Every gold input's gates at once, unbound into T views (B, G): their gradients are stacked
        # once, where indexing [:, t] would add a whole (B, T, G) gradient per step.
        gates_in = None if sampling else self._input_projection(emb).unbind(dim=1)
        cell_weights = self._cell_weights(emb)
        tops, contexts, maps, embs = [], [], [], []
        tokens = tgt_in[:, 0]  # (B,) BOS
        for t in range(tgt_in.size(1)):
            if sampling:  # scheduled sampling: this step's input is gold or the model's own token
                embs.append(self._embed(tokens[:, None])[:, 0])  # (B, E)
            gates = self._input_projection(embs[-1]) if sampling else gates_in[t]  # (B, G)
            top, context, weights, state = self._step(gates, state, cell_weights)  # (B, H)
            tops.append(top)
            contexts.append(context)
            maps.append(weights)
            if sampling and t + 1 < tgt_in.size(1):
                with torch.no_grad():
                    own = self.logits(self._readout(top, context, embs[-1])).argmax(dim=-1)  # (B,)
                use_gold = torch.rand(own.shape, device=own.device) < teacher_forcing
                tokens = torch.where(use_gold, tgt_in[:, t + 1], own)  # (B,)
        emb = torch.stack(embs, dim=1) if sampling else emb  # (B, T, E) the inputs actually used
        top = torch.stack(tops, dim=1)  # (B, T, H)
        context = None if contexts[0] is None else torch.stack(contexts, dim=1)  # (B, T, H)
        features = self._readout(top, context, emb)  # (B, T, H) one matrix multiply for all steps
        return self.dropout(features), None if maps[0] is None else torch.stack(maps, dim=1)

    def features(self, src: Tensor, src_keep: Tensor, tgt_in: Tensor, teacher_forcing: float = 1.0) -> Tensor:
        """Teacher forcing (with the given ratio) up to the output projection: -> (B, T, H)."""
        return self._teacher_forced(src, src_keep, tgt_in, teacher_forcing)[0]

    def forward(self, src: Tensor, src_keep: Tensor, tgt_in: Tensor) -> Tensor:
        """Teacher forcing: src (B, S), src_keep (B, S), tgt_in (B, T) -> logits (B, T, V)."""
        return self.logits(self.features(src, src_keep, tgt_in))  # (B, T, V)

    def attentions(self, src: Tensor, src_keep: Tensor, tgt_in: Tensor) -> AttentionMaps:
        """The cross-attention of a teacher-forced pass, (B, 1, T, S) as one head; none without attention."""
        _, weights = self._teacher_forced(src, src_keep, tgt_in, 1.0)
        return AttentionMaps([], [], [] if weights is None else [weights[:, None]])

    def step(self, prev_tokens: Tensor, state: RNNState) -> tuple[Tensor, RNNState, Tensor | None]:
        """One decoding step: prev_tokens (B, 1) -> (logits (B, V), state, attention (B, S) or None)."""
        emb = self._embed(prev_tokens)[:, 0]  # (B, E)
        top, context, weights, state = self._step(self._input_projection(emb), state, self._cell_weights(emb))  # (B, H)
        return self.logits(self.dropout(self._readout(top, context, emb))), state, weights
