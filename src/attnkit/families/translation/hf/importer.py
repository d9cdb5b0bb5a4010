"""`attnkit import hf SOURCE --out RUN`: a MarianMT model (OPUS-MT) as an attnkit run folder.

SOURCE is a local folder or a Hub id (`Helsinki-NLP/opus-mt-en-de`), found and checked as the
explorer's Hugging Face models are (`artifacts.hf`: the hub cache, fetched into when online; a
model with its own code, or with only pickled weights such as `pytorch_model.bin`, is refused).
Nothing is unpickled and no remote code runs: the weights are read from `model.safetensors`, the
rest from JSON and the two SentencePiece models, and `transformers` itself is not needed.

The run folder holds `config.yaml` (a post-norm Transformer with the model's `activation` and
`output_bias: true`; `data.corpus: none`, since no corpus came with it), `run.json` (the
vocabulary and the two SentencePiece models, `source.spm` and `target.spm`, copied) and
`checkpoints/step_00000000/model.safetensors`. Ids change: attnkit keeps PAD 0, UNK 1, BOS 2, EOS 3
first, then Marian's other pieces in Marian's order. BOS is Marian's decoder start (its pad),
and PAD and BOS get a logit bias of `NEVER`, so no search emits them (what OPUS-MT's
`bad_words_ids` does for `generate`). Decoding settings come from `generation_config.json`:
`beam` = num_beams, `alpha` = length_penalty (a different formula, docs/deployment.md).
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import torch
from safetensors import SafetensorError
from safetensors.torch import load_file

from attnkit.artifacts.checkpoint import read_json, save_checkpoint
from attnkit.artifacts.hf import check_folder, resolve
from attnkit.artifacts.runs import write_run
from attnkit.config.load import validate
from attnkit.data.tokenizers import SentencePieceTokenizer
from attnkit.data.vocab import BOS, PAD, SPECIALS, Vocabulary
from attnkit.errors import AttnkitError, CheckpointError
from attnkit.families.translation.codec import Vocabs, vocabs_to_json
from attnkit.families.translation.config import TranslationRun
from attnkit.families.translation.hf.marian import ACTIVATIONS, from_marian
from attnkit.families.translation.model import build

NEVER = -1e4  # the logit bias of PAD and BOS: far below any logit, finite for label smoothing, exact in bf16 and fp16
REQUIRED = ("d_model", "encoder_layers", "decoder_layers", "encoder_attention_heads", "encoder_ffn_dim", "pad_token_id", "eos_token_id")


def _json(path: Path) -> dict[str, Any]:
    return read_json(path, "a MarianMT folder has config.json, model.safetensors, source.spm, target.spm, vocab.json")


def read_weights(folder: Path) -> dict[str, torch.Tensor]:
    """The safetensors weights of `folder` (one file or shards; `artifacts.hf.check_folder` made sure there are some)."""
    weights: dict[str, torch.Tensor] = {}
    for path in sorted(folder.glob("*.safetensors")):
        try:
            weights |= load_file(str(path))
        except SafetensorError as e:
            raise CheckpointError(f"{path}: not a valid safetensors file ({e})") from None
    return weights


def check_config(config: dict[str, Any], folder: Path) -> None:
    """Refuse, in one line naming the key, what attnkit's Transformer does not compute exactly."""
    where = folder / "config.json"
    if config.get("model_type") != "marian":
        raise CheckpointError(f"{where}: a {config.get('model_type')} model; attnkit imports MarianMT models (model_type marian) only")
    for key in REQUIRED:
        if not isinstance(config.get(key), int):
            raise CheckpointError(f"{where}: no {key} (a whole number)")
    rules = {
        "decoder_attention_heads": config["encoder_attention_heads"],
        "decoder_ffn_dim": config["encoder_ffn_dim"],
        "scale_embedding": True,
    }
    for key, wanted in rules.items():
        if config.get(key, wanted) != wanted:
            raise CheckpointError(f"{where}: {key} is {config.get(key)}; attnkit's Transformer needs {wanted}")
    if config.get("activation_function") not in ACTIVATIONS:
        raise CheckpointError(f"{where}: activation_function {config.get('activation_function')} (attnkit has {', '.join(ACTIVATIONS)})")


def _rows(encoder: dict[str, int], config: dict[str, Any], where: Path) -> tuple[Vocabulary, torch.Tensor]:
    """attnkit's vocabulary of a Marian piece -> id table, and the Marian id of each attnkit id."""
    pad, eos, unk = config["pad_token_id"], config["eos_token_id"], encoder.get("<unk>")
    start = config.get("decoder_start_token_id", pad)
    if unk is None:
        raise CheckpointError(f"{where}: no <unk> piece")
    special = {pad, eos, unk, start}
    ordinary = sorted((i, piece) for piece, i in encoder.items() if i not in special)
    for i, piece in ordinary:
        if piece in SPECIALS or (piece.startswith(">>") and piece.endswith("<<")):
            why = "a name attnkit reserves for its own special" if piece in SPECIALS else "a target-language code, which attnkit does not handle yet"
            raise CheckpointError(f"{where}: piece {piece!r} (id {i}) is {why}")
    return Vocabulary([piece for _, piece in ordinary]), torch.tensor([pad, unk, start, eos] + [i for i, _ in ordinary])


def read_vocabs(folder: Path, config: dict[str, Any]) -> tuple[Vocabs, torch.Tensor, torch.Tensor, dict[str, Any]]:
    """The run's vocabularies and tokenizers, the Marian rows of its source and target ids, and tokenizer_config.json."""
    settings = _json(folder / "tokenizer_config.json") if (folder / "tokenizer_config.json").is_file() else {}
    src_vocab, src_rows = _rows(_json(folder / "vocab.json"), config, folder / "vocab.json")
    tgt_vocab, tgt_rows = src_vocab, src_rows
    if settings.get("separate_vocabs"):
        tgt_vocab, tgt_rows = _rows(_json(folder / "target_vocab.json"), config, folder / "target_vocab.json")
    tokenizers = [SentencePieceTokenizer(folder / name) for name in ("source.spm", "target.spm")]
    return Vocabs(tokenizers[0], tokenizers[1], src_vocab, tgt_vocab), src_rows, tgt_rows, settings


def run_config(config: dict[str, Any], vocabs: Vocabs, generation: dict[str, Any], settings: dict[str, Any], source: str) -> TranslationRun:
    """The attnkit config of the Marian model: its architecture, decoding settings and (no) data."""
    shared = config.get("share_encoder_decoder_embeddings", True) and vocabs.joint
    model = {
        "kind": "transformer", "layers": config["encoder_layers"], "encoder_layers": config["encoder_layers"],
        "decoder_layers": config["decoder_layers"], "d_model": config["d_model"], "n_heads": config["encoder_attention_heads"],
        "d_ff": config["encoder_ffn_dim"], "dropout": config.get("dropout", 0.1), "attention_dropout": config.get("attention_dropout", 0.0),
        "norm": "post", "positions": "sinusoidal", "max_positions": config.get("max_position_embeddings", 1024),
        "share_embeddings": shared, "tie_output": config.get("tie_word_embeddings", True),
        "activation": ACTIVATIONS[config["activation_function"]], "output_bias": True,
    }  # fmt: skip
    data = {"corpus": "none", "src_lang": settings.get("source_lang") or "src", "tgt_lang": settings.get("target_lang") or "tgt",
            "tokenizer": vocabs.src_tokenizer.kind, "vocab_size": len(vocabs.src_vocab), "joint": vocabs.joint}  # fmt: skip
    decode = {"beam": generation.get("num_beams") or 4, "alpha": max(float(generation.get("length_penalty", 1.0)), 0.0)}
    if isinstance(settings.get("model_max_length"), int) and settings["model_max_length"] > 1:
        decode["max_src_len"] = min(settings["model_max_length"] - 1, model["max_positions"] - 1)
    return validate({"data": data, "model": model, "train": {"max_steps": 1000}, "decode": decode}, f"{source} (imported)", TranslationRun)


def import_marian(source: str, out: str | Path) -> Path:
    """Write the run folder `out` for the MarianMT model `source` (a folder or a Hub id); returns `out`.

    Raises:
        AttnkitError: `out` exists, the source is missing or offline, or the model is not one
            attnkit computes exactly (one line naming the key or file).
    """
    out = Path(out)
    if out.exists():
        raise AttnkitError(f"{out}: exists; give a new --out for the imported run")
    folder = resolve(source)
    config = check_folder(folder, source, hub=not Path(source).is_dir())  # safetensors only, no model code
    marian = read_weights(folder)
    check_config(config, folder)
    vocabs, src_rows, tgt_rows, settings = read_vocabs(folder, config)
    generation = _json(folder / "generation_config.json") if (folder / "generation_config.json").is_file() else config
    run = run_config(config, vocabs, generation, settings, source)
    try:
        weights = from_marian(marian, config["encoder_layers"], config["decoder_layers"], src_rows, tgt_rows)
    except KeyError as e:
        raise CheckpointError(f"{folder}: no weight {e.args[0]} in the safetensors files") from None
    weights["final_logits_bias"][[PAD, BOS]] = NEVER  # never searched for
    model = build(run, vocabs)
    try:
        model.load_state_dict(weights, strict=True)
    except RuntimeError as e:
        raise CheckpointError(f"{folder}: the weights do not fit the model of config.json ({str(e).strip().splitlines()[-1].strip()})") from None
    try:
        write_run(out, run, vocabs_to_json(vocabs, out))
        save_checkpoint(out, 0, model, state={"imported": source})
    except BaseException:
        shutil.rmtree(out, ignore_errors=True)
        raise
    return out
