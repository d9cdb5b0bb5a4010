"""Decode with an ONNX export on ONNX Runtime: the two graphs behind attnkit's own searches.

`OnnxTransformer` implements the decoding protocol (`encode` / `init_state` / `step`, see
`attnkit.decode.hypothesis.Decodable`) by running `encoder.onnx` and `decoder.onnx` in
`onnxruntime.InferenceSession`s, so `translate` is `attnkit translate`'s search (greedy or beam,
`attnkit.decode`) over ONNX Runtime's network: the outputs differ from attnkit's only where the
two runtimes' float32 arithmetic does. The search's bookkeeping (top-k, reordering the cache)
stays in PyTorch; a service without PyTorch ports those ~150 lines of `attnkit.decode`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor

from attnkit.config.schema import Decode
from attnkit.decode.beam_state import per_sentence
from attnkit.families.translation.export.bundle import Bundle, optional
from attnkit.families.translation.export.onnx_graphs import DECODER, ENCODER, cache_names
from attnkit.families.translation.translate import search_ids


@dataclass
class OnnxState:
    """The decoder graph's inputs between steps."""

    self_kv: list[Tensor]  # self_k0, self_v0, ... (R, H, t, E)
    cross_kv: list[Tensor] = per_sentence()  # cross_k0, cross_v0, ... (B, H, S, E)
    src_keep: Tensor = per_sentence()  # (B, S)


class OnnxTransformer:
    """An exported Transformer on ONNX Runtime (CPU), with attnkit's decoding protocol."""

    def __init__(self, bundle: Bundle, threads: int = 0) -> None:
        ort = optional("onnxruntime")
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1

        def session(name: str) -> Any:
            return ort.InferenceSession(str(bundle.folder / name), options, providers=["CPUExecutionProvider"])

        self.encoder, self.decoder = session(ENCODER), session(DECODER)
        engine = bundle.info["engine"]
        self.layers, self.heads, self.head_dim, self.value_dim = engine["layers"], engine["heads"], engine["head_dim"], engine["value_dim"]
        self.past, self.present, self.cross = (cache_names(self.layers, side) for side in ("past", "present", "cross"))

    def encode(self, src: Tensor, src_keep: Tensor) -> list[Tensor]:
        """src (B, S), src_keep (B, S) -> cross keys/values (B, H, S, E) of each layer."""
        outputs = self.encoder.run(self.cross, {"src": src.numpy(), "src_keep": src_keep.numpy()})
        return [torch.from_numpy(x) for x in outputs]

    def init_state(self, memory: list[Tensor], src_keep: Tensor) -> OnnxState:
        rows = src_keep.size(0)
        empty = [torch.zeros(rows, self.heads, 0, self.head_dim if kv == "k" else self.value_dim) for _ in range(self.layers) for kv in "kv"]
        return OnnxState(empty, memory, src_keep)  # (B, H, 0, E) each

    def step(self, prev_tokens: Tensor, state: OnnxState) -> tuple[Tensor, OnnxState, None]:
        """prev_tokens (R, 1) -> logits (R, V), the state one position longer, no attention."""
        feeds = {"prev": prev_tokens.numpy(), "src_keep": state.src_keep.numpy()}
        feeds |= {name: x.numpy() for name, x in zip(self.past, state.self_kv)}
        feeds |= {name: x.numpy() for name, x in zip(self.cross, state.cross_kv)}
        logits, *self_kv = self.decoder.run(["logits", *self.present], feeds)
        return torch.from_numpy(logits), OnnxState([torch.from_numpy(x) for x in self_kv], state.cross_kv, state.src_keep), None


def translate(bundle: Bundle, model: OnnxTransformer, lines: Sequence[str], decode: Decode, source: str = "input") -> list[str]:
    """Translate `lines` as `attnkit translate` does with `decode` (beam 1: greedy), the network on ONNX Runtime."""
    hyps = search_ids(model, bundle.source_ids(lines, source), decode.with_overrides(workers=1))
    return [bundle.text(nbest[0].tokens) for nbest in hyps]
