"""`attnkit export RUN --format hf`: a folder that `MarianMTModel`, `MarianTokenizer` and
`pipeline("translation")` load.

The folder holds `config.json` and `model.safetensors` (written by `MarianMTModel.save_pretrained`
from the weights `marian.to_marian` maps), `generation_config.json`, and for runs tokenized by
SentencePiece the tokenizer: `source.spm`, `target.spm` (the run's models), `vocab.json` (and
`target_vocab.json` when the vocabularies are separate) and `tokenizer_config.json`. Ids stay the
run's: PAD 0 (`pad_token_id`), UNK 1, BOS 2 (`decoder_start_token_id`), EOS 3 (`eos_token_id`).

Runs with a word or char tokenizer export the model and `vocab.json` only: `MarianTokenizer`
reads SentencePiece models and nothing else, so their users feed ids.

`generate` cannot express all of attnkit's decoding: it ranks finished beams by
log P / |Y|^length_penalty where attnkit divides by ((5 + |Y|) / 6)^alpha, and its step limit is
one number (`max_length`) where attnkit's is floor(max_len_a * (source + 1) + max_len_b) per
sentence. The generation config sets `num_beams` = beam, `length_penalty` = alpha, `early_stopping`
(stop once `beam` hypotheses finished, as attnkit does) and `max_length` from the longest source
the run accepts. Greedy search is the same in both.
"""

from __future__ import annotations

import json
import logging
import math
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from attnkit.artifacts.hf import require
from attnkit.artifacts.runs import LoadedRun
from attnkit.data.tokenizers import SentencePieceTokenizer
from attnkit.data.vocab import BOS, EOS, PAD, Vocabulary
from attnkit.errors import AttnkitError
from attnkit.families.translation.hf import INTEROP
from attnkit.families.translation.hf.marian import check_exportable, to_marian
from attnkit.models.transformer import Transformer

log = logging.getLogger("attnkit")


def step_limit(decode: Any) -> int:
    """The most output tokens attnkit decodes for the longest source the run accepts (EOS included)."""
    return math.floor(decode.max_len_a * (decode.max_src_len + 1) + decode.max_len_b)


def marian_config(loaded: LoadedRun, model: Transformer) -> dict[str, Any]:
    """The `MarianConfig` fields of the run's model."""
    cfg, vocabs, attn = loaded.run.model, loaded.vocabs, model.decoder_layers[0].self_attn
    d_ff = model.encoder_layers[0].ffn.w_1.out_features
    return dict(
        vocab_size=len(vocabs.src_vocab), decoder_vocab_size=len(vocabs.tgt_vocab), d_model=model.d_model,
        encoder_layers=len(model.encoder_layers), decoder_layers=len(model.decoder_layers),
        encoder_attention_heads=attn.n_heads, decoder_attention_heads=attn.n_heads, encoder_ffn_dim=d_ff, decoder_ffn_dim=d_ff,
        activation_function=model.encoder_layers[0].ffn.activation, dropout=cfg.dropout, attention_dropout=cfg.attention_dropout,
        activation_dropout=0.0, max_position_embeddings=max(1024, decode_positions(loaded)), scale_embedding=True,
        pad_token_id=PAD, eos_token_id=EOS, bos_token_id=BOS, decoder_start_token_id=BOS, forced_eos_token_id=None,
        share_encoder_decoder_embeddings=model.src_embed is model.tgt_embed, tie_word_embeddings=model.output is None,
    )  # fmt: skip


def decode_positions(loaded: LoadedRun) -> int:
    """Positions the longest accepted source (with its EOS) and its longest output need."""
    return max(loaded.run.decode.max_src_len + 1, step_limit(loaded.run.decode)) + 1


def generation_config(loaded: LoadedRun) -> dict[str, Any]:
    """`GenerationConfig` fields as near to the run's `decode` settings as `generate` goes (module docstring)."""
    d = loaded.run.decode
    fields = dict(decoder_start_token_id=BOS, bos_token_id=BOS, eos_token_id=EOS, pad_token_id=PAD, forced_eos_token_id=None,
                  num_beams=d.beam, max_length=step_limit(d) + 1, do_sample=False)  # fmt: skip
    return fields | (dict(length_penalty=d.alpha, early_stopping=True) if d.beam > 1 else {})  # beam-only flags


def _vocab_json(vocab: Vocabulary, path: Path) -> None:
    tokens = vocab.to_json()["tokens"]
    path.write_text(json.dumps({token: i for i, token in enumerate(tokens)}, ensure_ascii=False, indent=1), encoding="utf-8")


def write_tokenizer(loaded: LoadedRun, folder: Path) -> bool:
    """Write MarianTokenizer's files into `folder`; False (vocab.json only) for a run not tokenized by SentencePiece."""
    vocabs = loaded.vocabs
    if not all(isinstance(t, SentencePieceTokenizer) for t in (vocabs.src_tokenizer, vocabs.tgt_tokenizer)):
        _vocab_json(vocabs.src_vocab, folder / "vocab.json")
        log.warning("%s: a %s tokenizer; MarianTokenizer reads SentencePiece models only, so the export holds the model and "
                    "vocab.json (ids) without a tokenizer", loaded.folder, vocabs.src_tokenizer.kind)  # fmt: skip
        return False
    transformers = require(INTEROP)
    data = loaded.run.data
    with tempfile.TemporaryDirectory() as tmp:
        files = Path(tmp)
        shutil.copyfile(vocabs.src_tokenizer.model_path, files / "source.spm")
        shutil.copyfile(vocabs.tgt_tokenizer.model_path, files / "target.spm")
        _vocab_json(vocabs.src_vocab, files / "vocab.json")
        separate = not vocabs.joint
        if separate:
            _vocab_json(vocabs.tgt_vocab, files / "target_vocab.json")
        tokenizer = transformers.MarianTokenizer(
            source_spm=str(files / "source.spm"), target_spm=str(files / "target.spm"), vocab=str(files / "vocab.json"),
            target_vocab_file=str(files / "target_vocab.json") if separate else None, separate_vocabs=separate,
            source_lang=data.src_lang, target_lang=data.tgt_lang, bos_token="<s>", model_max_length=loaded.run.decode.max_src_len + 1,
        )  # fmt: skip
        tokenizer.save_pretrained(str(folder))
    return True


def write(loaded: LoadedRun) -> Callable[[Path], dict[str, Any]]:
    """The engine writer for `bundle.write_bundle`: the Marian model, its generation config and tokenizer."""
    model = check_exportable(loaded.model)
    transformers = require(INTEROP)

    def into(folder: Path) -> dict[str, Any]:
        model.float().eval()
        hf = transformers.MarianMTModel(transformers.MarianConfig(**marian_config(loaded, model)))
        missing, unexpected = hf.load_state_dict(to_marian(model), strict=False)
        if unexpected or any("embed_positions" not in name for name in missing):  # only the positions, which Marian computes
            raise AttnkitError(f"Hugging Face export: Marian's weights do not match (missing {missing[:3]}, unexpected {unexpected[:3]})")
        hf.generation_config = transformers.GenerationConfig(**generation_config(loaded))
        hf.save_pretrained(str(folder))
        tokenizer = write_tokenizer(loaded, folder)
        return {"transformers": transformers.__version__, "architecture": "MarianMTModel", "tokenizer": tokenizer}

    return into
