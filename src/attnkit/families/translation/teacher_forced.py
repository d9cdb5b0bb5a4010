"""One teacher-forced pass of attnkit's model over given outputs: every attention map, and the attention a search records.

An engine (`--engine ctranslate2`) returns tokens, not attention. Fed back through attnkit's model
as the decoder input (BOS + the outputs), one batched pass (`model.attentions`) gives every map of
every hypothesis: encoder self-attention (S x S), decoder self-attention (T x T) and cross-attention
(T x S), per layer and head, where row t is the step that emitted output t (its EOS included when
finished). The decoder's causal mask makes row t see only what the search saw at step t, so the
last layer's cross-attention averaged over heads (`step_attention`) is what greedy and beam search
record in `Hypothesis.attention`, up to float rounding (tested within 1e-5 against greedy search).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor, nn

from attnkit.data.batching import collate
from attnkit.families.translation.translate import length_batches

Maps = dict[str, list[Tensor]]  # kind (encoder, decoder_self, cross) -> per layer (H, Tq, Tk)


@torch.inference_mode()
def teacher_forced(model: nn.Module, outputs: Sequence[tuple[list[int], list[int], bool]], batch_size: int = 64) -> list[Maps]:
    """The attention maps of each (source ids, output ids, finished) (no EOS in either), cut to its own lengths.

    Batches of `batch_size`, by source length; T = outputs + 1 if finished (the EOS step), else the outputs;
    S = the source + its EOS. A model without a kind of attention has no entry for it.
    """
    maps: list[Maps] = [{} for _ in outputs]
    examples = [(src, tgt) for src, tgt, _ in outputs]
    device = next(model.parameters()).device
    for index in length_batches([len(src) for src, _ in examples], batch_size):
        batch = collate(examples, index).to(device)
        found = model.attentions(batch.src, batch.src_keep, batch.tgt_in)  # lists of (B, H, Tq, Tk)
        for b, i in enumerate(index):
            src, tgt, finished = outputs[i]
            T, S = len(tgt) + int(finished), len(src) + 1
            shapes = {"encoder": (S, S), "decoder_self": (T, T), "cross": (T, S)}
            maps[i] = {kind: [w[b, :, :q, :k].float().cpu() for w in getattr(found, kind)]  # (H, Tq, Tk)
                       for kind, (q, k) in shapes.items() if getattr(found, kind)}  # fmt: skip
    return maps


def step_attention(maps: Maps) -> Tensor | None:
    """The attention a search records for a hypothesis: the last layer's cross-attention averaged over heads (T, S)."""
    cross = maps.get("cross")
    return cross[-1].mean(dim=0) if cross else None  # (T, S)
