"""Open a Hugging Face model: a local folder (`save_pretrained`'s) or a hub id, checked first.

What is refused, each with one line naming the source: a missing folder or unknown id, a hub id
not in the cache while offline, a model that needs its own code (`auto_map` in config.json, or
`.py` files: attnkit never passes `trust_remote_code`), weights only in pickled files
(`pytorch_model.bin`: unpickling can run code), all checked by `artifacts.hf` (the hub cache and
`check_folder`, shared with the Marian import); and an architecture this transformers does not know.
The model loads with eager attention (the attention modules then compute and return their
weights; the long road, `sources.hf.long`, names its own implementation instead), in the dtype its config names (`dtype="auto"`), and with `device_map="auto"` when
`accelerate` is installed.
"""

from __future__ import annotations

import importlib.util
import json
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from attnkit.artifacts.hf import check_folder, require, resolve
from attnkit.errors import AttnkitError

log = logging.getLogger("attnkit")

WHAT = "Hugging Face models in the explorer"  # what needs transformers, in the one line when it is missing
POSITION_KEYS = ("max_position_embeddings", "n_positions", "max_source_positions")

# An architecture (`HfModel.arch`) in a sentence: "this one is an encoder".
ARCH_NOUNS = {"encoder": "an encoder", "decoder": "a decoder", "encoder-decoder": "an encoder-decoder model", "vision": "a vision model"}


@dataclass
class HfModel:
    """A loaded model, what reads its input (tokenizer or image processor) and its shape of attention."""

    name: str  # as the user gave it (folder or hub id)
    model: Any  # a transformers PreTrainedModel, in eval mode
    tokenizer: Any | None  # text models
    processor: Any | None  # vision models: the image processor
    arch: str  # "encoder", "decoder", "encoder-decoder" or "vision"
    max_positions: int | None  # the longest input it takes (None: no fixed limit, e.g. T5's relative positions)


def model_class(transformers, config: Any, name: str):
    """The class config.json's `architectures` names (the base `AutoModel` class when it names none)."""
    names = getattr(config, "architectures", None) or []
    if not names:
        return transformers.AutoModel
    cls = getattr(transformers, names[0], None)
    if cls is None:
        raise AttnkitError(f"{name}: unknown architecture {names[0]} (transformers {transformers.__version__} does not have it)")
    return cls


def architecture(transformers, model: Any) -> str:
    """Which attention the model has: encoder-decoder, vision (pixel input), decoder (causal) or encoder."""
    config = model.config
    if getattr(config, "is_encoder_decoder", False):
        return "encoder-decoder"
    if getattr(model, "main_input_name", "input_ids") == "pixel_values":
        return "vision"
    auto = transformers.models.auto.modeling_auto
    causal_only = config.model_type in auto.MODEL_FOR_CAUSAL_LM_MAPPING_NAMES and config.model_type not in auto.MODEL_FOR_MASKED_LM_MAPPING_NAMES
    return "decoder" if getattr(config, "is_decoder", False) or causal_only else "encoder"


def max_positions(model: Any, arch: str) -> int | None:
    """The longest input the model's positions allow (None: relative positions or a vision model). Learned
    positions that count from after the padding index (RoBERTa's embeddings: pad + 1, pad + 2, ...) take that
    many fewer tokens than the table has rows."""
    if arch == "vision":
        return None
    for key in POSITION_KEYS:
        value = getattr(model.config, key, None)
        if isinstance(value, int) and value > 0:
            embeddings = getattr(model.base_model, "embeddings", None)
            offset = hasattr(embeddings, "create_position_ids_from_input_ids") and isinstance(getattr(embeddings, "padding_idx", None), int)
            return value - embeddings.padding_idx - 1 if offset else value
    return None


def _reader(transformers, folder: Path, name: str, arch: str) -> tuple[Any | None, Any | None]:
    """(tokenizer, image processor) of the folder: the one the architecture needs."""
    try:
        if arch == "vision":
            return None, transformers.AutoImageProcessor.from_pretrained(folder, trust_remote_code=False)
        return transformers.AutoTokenizer.from_pretrained(folder, trust_remote_code=False), None
    except (OSError, ValueError, KeyError, TypeError) as e:
        what = "image processor (preprocessor_config.json)" if arch == "vision" else "tokenizer (tokenizer.json or the like)"
        raise AttnkitError(f"{name}: cannot load its {what}: {str(e).splitlines()[0] if str(e) else type(e).__name__}") from None


def load(source: str, attn_implementation: str = "eager") -> HfModel:
    """Open `source` (folder or hub id), check it and load the model for attention collection (eager attention,
    or the implementation named: the long road's, `sources.hf.long.capture`)."""
    transformers = require(WHAT)
    folder = resolve(source)
    check_folder(folder, source, hub=not Path(source).is_dir())
    transformers.utils.logging.set_verbosity_error()
    transformers.utils.logging.disable_progress_bar()
    try:
        config = transformers.AutoConfig.from_pretrained(folder, trust_remote_code=False)
    except (ValueError, KeyError):
        kind = json.loads((folder / "config.json").read_text(encoding="utf-8")).get("model_type")
        raise AttnkitError(f"{source}: unknown architecture: model_type {kind!r} is not one transformers {transformers.__version__} knows") from None
    cls = model_class(transformers, config, source)
    extra = {"device_map": "auto"} if importlib.util.find_spec("accelerate") else {}
    try:
        model = cls.from_pretrained(folder, config=config, attn_implementation=attn_implementation, dtype="auto", use_safetensors=True, **extra)
    except (OSError, ValueError, RuntimeError) as e:
        raise AttnkitError(f"{source}: cannot load the {cls.__name__} weights: {str(e).splitlines()[0] if str(e) else type(e).__name__}") from None
    model.eval()
    arch = architecture(transformers, model)
    tokenizer, processor = _reader(transformers, folder, source, arch)
    log.debug("%s: %s (%s), %s", source, cls.__name__, arch, next(model.parameters()).dtype)
    return HfModel(source, model, tokenizer, processor, arch, max_positions(model, arch))
