"""Is attention an explanation? Methods that read more than one raw attention map.

- `rollout`: attention rollout (Abnar & Zuidema 2020, eq. for joint attention with the residual term);
  for encoder-decoder models, cross attention composed with the encoder's rollout.
- `flow`: attention flow, the maximum flow through the layered graph of the same matrices (scipy).
- `attribution`: input x gradient and integrated gradients on the embeddings (captum), with the
  completeness check of Sundararajan et al. (2017).
- `heads`: per-layer, per-head statistics over many sentences (Clark et al. 2019).
- `importance`: head importance from the gradient of the loss with respect to a head mask, the
  pruning order and the pruning curve (Michel et al. 2019).
- `correlation`: Kendall's tau-b between an attention-derived score and an attribution.
- `faithfulness`: ERASER comprehensiveness and sufficiency (AOPC), the deletion curve and leave-one-out of a
  token ranking (DeYoung et al. 2020; `attnkit faithfulness`).

Every function takes plain tensors (per-layer attention weights `(H, Tq, Tk)`, token lists, callables)
and never a model family, so attnkit runs and other models' attention use the same code.
The optional packages (scipy, captum) are imported when first needed (`extras.require`).
"""
