"""The model's input for one text (or image) and, for an encoder-decoder model, its target.

Text is tokenized as the model's tokenizer does (special tokens included). An input longer than
the model's positions is refused, naming both lengths, unless `truncate` cuts it. An
encoder-decoder model attends over a target: the given one (tokenized as the tokenizer's target,
its end token included) or the model's own greedy output (`generate`, one beam). Either way the
decoder reads the start token and the target but its last token (`target_tokens`, the queries of
`decoder_self` and `cross`), and position t emits output t (`output_tokens`). A vision model's
input is the image, resized by its image processor; a token per patch, row by row, after the
model's own ([CLS]) tokens. A sentence pair (``first<TAB>second``, with `pair`: `attnkit faithfulness
--text2-column`) is encoded as the tokenizer encodes pairs (token types too).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import torch
from torch import Tensor

from attnkit.errors import AttnkitError, TooManyTokens
from attnkit.sources.hf.load import HfModel
from attnkit.sources.options import AttentionOptions


@dataclass
class HfInputs:
    """The forward call's inputs (batch 1) and the labels of its positions."""

    inputs: dict[str, Tensor]
    tokens: list[str]  # the input's tokens (vision: filled in from the model's sequence length)
    target_tokens: list[str] | None = None  # encoder-decoder: the decoder's input
    output_tokens: list[str] | None = None  # encoder-decoder: what each decoder position emits
    output_ids: list[int] | None = None  # their ids
    grid: tuple[int, int] | None = None  # vision: patches per column and per row
    specials: set[str] = field(default_factory=set)


def _ids(hf: HfModel, text: str, truncate: bool, target: bool = False) -> Tensor:
    """Token ids (1, T) of `text`, checked against the model's positions."""
    kwargs = {"text_target": text} if target else {"text": text}
    ids = hf.tokenizer(**kwargs, return_tensors="pt")["input_ids"]  # (1, T)
    limit = hf.max_positions
    if limit is not None and ids.size(1) > limit:
        if not truncate:
            what = "target" if target else "text"
            raise TooManyTokens(f"{hf.name}: the {what} is {ids.size(1)} tokens, the model takes at most {limit}{TooManyTokens.HINT}")
        ids = hf.tokenizer(**kwargs, truncation=True, max_length=limit, return_tensors="pt")["input_ids"]  # (1, limit)
    if ids.size(1) == 0:
        raise AttnkitError(f"{hf.name}: the text has no tokens")
    return ids


def _decoder(hf: HfModel, ids: Tensor, options: AttentionOptions) -> tuple[Tensor, Tensor]:
    """(decoder input (1, T), outputs (1, T)) of an encoder-decoder model for source ids (1, S)."""
    model = hf.model
    start = model.generation_config.decoder_start_token_id
    start = model.config.decoder_start_token_id if start is None else start
    if start is None:
        raise AttnkitError(f"{hf.name}: the config names no decoder_start_token_id")
    if options.target is not None:
        outputs = _ids(hf, options.target, options.truncate, target=True).to(model.device)  # (1, T)
        return torch.cat([torch.full_like(outputs[:, :1], start), outputs[:, :-1]], dim=1), outputs  # (1, T), (1, T)
    limit = hf.max_positions or 10**9
    new = min(options.max_new_tokens or 2 * ids.size(1) + 10, limit - 1)
    with torch.inference_mode():
        generated = model.generate(input_ids=ids, attention_mask=torch.ones_like(ids), do_sample=False, num_beams=1,
                                   max_new_tokens=new, decoder_start_token_id=start)  # (1, 1 + n)  # fmt: skip
    return generated[:, :-1].clone(), generated[:, 1:].clone()  # (1, n), (1, n)


def _image(hf: HfModel, image: str | None) -> HfInputs:
    from PIL import Image, UnidentifiedImageError

    if image is None:
        raise AttnkitError(f"{hf.name}: a vision model reads an image: give --image FILE")
    try:
        with Image.open(Path(image)) as img:
            pixels = hf.processor(images=img.convert("RGB"), return_tensors="pt")["pixel_values"]  # (1, C, H, W)
    except (OSError, UnidentifiedImageError) as e:
        raise AttnkitError(f"{image}: cannot read the image: {e}") from None
    patch = getattr(hf.model.config, "patch_size", None)
    patch = (patch, patch) if isinstance(patch, int) else tuple(patch or (1, 1))
    grid = (pixels.size(2) // patch[0], pixels.size(3) // patch[1])
    tokens = [f"patch {r},{c}" for r in range(grid[0]) for c in range(grid[1])]
    return HfInputs({"pixel_values": pixels.to(hf.model.device, hf.model.dtype)}, tokens, grid=grid)


def pair_inputs(hf: HfModel, text: str, truncate: bool) -> HfInputs:
    """The inputs of a sentence pair ``first<TAB>second``, encoded as the tokenizer encodes pairs (token types too)."""
    first, second = text.split("\t", 1)
    limit = hf.max_positions
    enc = hf.tokenizer(first, second, return_tensors="pt", **({"truncation": True, "max_length": limit} if truncate and limit else {}))
    if limit is not None and enc["input_ids"].size(1) > limit:
        raise TooManyTokens(f"{hf.name}: the pair is {enc['input_ids'].size(1)} tokens, the model takes at most {limit}{TooManyTokens.HINT}")
    inputs = {k: v.to(hf.model.device) for k, v in enc.items() if k in ("input_ids", "attention_mask", "token_type_ids")}  # (1, S) each
    return HfInputs(inputs, hf.tokenizer.convert_ids_to_tokens(inputs["input_ids"][0].tolist()), specials=set(hf.tokenizer.all_special_tokens))


def prepare(hf: HfModel, text: str | None, options: AttentionOptions) -> HfInputs:
    """The inputs of one forward call that yields every kind of attention the model has."""
    if hf.arch == "vision":
        return _image(hf, options.image or text)
    if options.image is not None:
        raise AttnkitError(f"{hf.name}: --image is for vision models; this is a text model ({hf.arch})")
    if options.target is not None and hf.arch != "encoder-decoder":
        raise AttnkitError(f"{hf.name}: --target is for encoder-decoder models; this one is {hf.arch}-only")
    if options.pair and text is not None and "\t" in text:
        return pair_inputs(hf, text, options.truncate)
    tok = hf.tokenizer
    ids = _ids(hf, text or "", options.truncate).to(hf.model.device)  # (1, S)
    inputs = {"input_ids": ids, "attention_mask": torch.ones_like(ids)}
    prep = HfInputs(inputs, tok.convert_ids_to_tokens(ids[0].tolist()), specials=set(tok.all_special_tokens))
    if hf.arch == "encoder-decoder":
        decoder_in, outputs = _decoder(hf, ids, options)
        inputs.update(decoder_input_ids=decoder_in, decoder_attention_mask=torch.ones_like(decoder_in))
        prep.target_tokens = tok.convert_ids_to_tokens(decoder_in[0].tolist())
        prep.output_ids = outputs[0].tolist()
        prep.output_tokens = tok.convert_ids_to_tokens(prep.output_ids)
    return prep


def vision_tokens(prep: HfInputs, length: int) -> list[str]:
    """The labels of a vision model's `length` positions: its own tokens first, then the patches."""
    extra = length - len(prep.tokens)
    if extra < 0:
        raise AttnkitError(f"the model attends over {length} positions, fewer than its {len(prep.tokens)} patches")
    return (["[CLS]"] if extra == 1 else [f"[token {i}]" for i in range(extra)]) + prep.tokens
