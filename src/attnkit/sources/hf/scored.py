"""The predicted class of a Hugging Face sequence classifier, ready for the faithfulness metrics
(`sources.scored`, whose docstring says how tokens are removed and why: the mask token).

The attention comes from the input's record (`sources.record.explain_inputs`, the one road): row 0
([CLS], `<s>`: what BERT-style heads pool) of each layer's head mean, of the rollout and of the flow
(`sources.scored.compared_rows`). What re-runs the model is read from the source: the inputs
(`hf.inputs.prepare`, again) and one forward pass for p(c | x), c the predicted class. The attributions score c's logit
(`hf.attribute.score_function`). The ranked tokens are the input's tokens but its special ones; a
sentence pair (``first<TAB>second``, `--text2-column`) is encoded as the tokenizer encodes pairs, and the
tokens of both texts are ranked.
"""

from __future__ import annotations

import torch
from torch import Tensor

from attnkit.errors import AttnkitError
from attnkit.sources.hf.inputs import HfInputs, prepare
from attnkit.sources.hf.load import HfModel
from attnkit.sources.options import AttentionOptions
from attnkit.sources.scored import ScoredOutput, batched, compared_rows


def mask_id(hf: HfModel) -> int:
    """The id that stands for a removed token: the mask token, else the unknown token."""
    tok = hf.tokenizer
    found = tok.mask_token_id if tok.mask_token_id is not None else tok.unk_token_id
    if found is None:
        raise AttnkitError(f"{hf.name}: the tokenizer has no mask or unknown token to stand for a removed token")
    return found


def masked_predict(hf: HfModel, prep: HfInputs, positions: list[int], c: int, padding: bool = False):
    """keep (N, T) -> p(c | the input with the tokens at `positions` where keep is False masked) (N,); with `padding`,
    made padding instead: the pad token, its attention mask 0 (`--removal pad`)."""
    ids = prep.inputs["input_ids"]  # (1, S)
    replacement = (hf.tokenizer.pad_token_id or 0) if padding else mask_id(hf)

    def predict(keep: Tensor) -> Tensor:
        n = keep.size(0)
        batch = ids.expand(n, -1).clone()  # (N, S)
        removed = torch.zeros_like(batch, dtype=torch.bool)  # (N, S)
        removed[:, positions] = ~keep.to(batch.device)
        batch[removed] = replacement
        inputs = {k: v.expand(n, -1) for k, v in prep.inputs.items()}  # (N, S) each: the attention mask, token types
        if padding:
            inputs["attention_mask"] = inputs["attention_mask"].masked_fill(removed, 0)  # (N, S)
        with torch.inference_mode():
            logits = hf.model(**{**inputs, "input_ids": batch}).logits  # (N, C)
        return logits.double().softmax(dim=-1)[:, c]  # (N,)

    return batched(predict)


def deleted_predict(hf: HfModel, prep: HfInputs, positions: list[int], c: int):
    """keep (N, T) -> p(c | the input with the tokens at `positions` where keep is False deleted) (N,): the removal of
    ferret-xai and of ERASER's BERT pipeline (`analysis.faithfulness.ferret_aopc`); each batch padded to its longest input."""
    ranked = torch.zeros(prep.inputs["input_ids"].size(1), dtype=torch.bool)  # (S,)
    ranked[positions] = True
    pad = hf.tokenizer.pad_token_id or 0

    def predict(keep: Tensor) -> Tensor:
        n = keep.size(0)
        present = (~ranked).expand(n, -1).clone()  # (N, S): the special tokens stay
        present[:, positions] = keep.cpu()
        lengths = present.sum(dim=1)  # (N,)
        mask = torch.arange(int(lengths.max())).unsqueeze(0) < lengths.unsqueeze(1)  # (N, S'): left-aligned, padded
        inputs = {}
        for key, v in prep.inputs.items():
            packed = torch.full(mask.shape, pad if key == "input_ids" else 0, dtype=v.dtype)  # (N, S')
            packed[mask] = v.cpu().expand(n, -1)[present]
            inputs[key] = packed.to(v.device)
        inputs["attention_mask"] = mask.long().to(prep.inputs["input_ids"].device)
        with torch.inference_mode():
            logits = hf.model(**inputs).logits  # (N, C)
        return logits.double().softmax(dim=-1)[:, c]  # (N,)

    return batched(predict)


def check_hf(hf: HfModel) -> None:
    """One line unless `hf` is an encoder with a sequence-classification head."""
    if hf.arch != "encoder":
        raise AttnkitError(f"{hf.name}: faithfulness explains a sequence classifier's class; this is a {hf.arch} model")
    name = type(hf.model).__name__
    if not name.endswith("ForSequenceClassification"):
        raise AttnkitError(f"{hf.name}: {name} has no sequence-classification head (...ForSequenceClassification)")


def scored_hf(source, text: str, flow: bool = False, truncate: bool = False, removal: str = "mask") -> ScoredOutput:
    """The predicted class of `text` through the sequence classifier `source.hf` (module docstring); `removal="delete"`:
    tokens are deleted as ferret-xai deletes them (`deleted_predict`); "pad": made padding (`masked_predict`)."""
    from attnkit.sources.hf.attribute import score_function
    from attnkit.sources.record import explain_inputs

    hf: HfModel = source.hf
    check_hf(hf)
    options = AttentionOptions(truncate=truncate, pair=True)
    (record,) = explain_inputs(source, [text], options)
    rows = compared_rows(record, ("encoder", 0), flow)  # name -> (S,)
    prep = prepare(hf, text, options)
    with torch.inference_mode():
        logits = hf.model(**prep.inputs).logits  # (1, C)
    probs = logits[0].double().softmax(dim=-1)  # (C,)
    c = int(probs.argmax())
    specials = set(hf.tokenizer.all_special_ids)
    positions = [i for i, t in enumerate(prep.inputs["input_ids"][0].tolist()) if t not in specials]
    if not positions:
        raise AttnkitError(f"{hf.name}: the text {text!r} has no tokens but special ones")
    f, x, label = score_function(hf, prep, c, logits)  # the pass above: no second one
    attention = {name: row[positions] for name, row in rows.items()}  # (T,) each
    tokens = [prep.tokens[i] for i in positions]
    if removal == "delete":
        predict = deleted_predict(hf, prep, positions, c)
    else:
        predict = masked_predict(hf, prep, positions, c, padding=removal == "pad")
    return ScoredOutput(tokens, label, float(probs[c]), predict, attention, f, x, positions)
