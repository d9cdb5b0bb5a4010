"""The translation task of the shared training loop: parallel text, a teacher-forced label-smoothed
loss summed over target tokens, and validation by loss, perplexity, attention entropy and BLEU.

The data is prepared once (`attnkit.artifacts.prepared`): checked, tokenized and encoded, the
validation sources included, so `--resume`, every DDP rank and every validation reuse the ids.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import torch
from torch import nn

from attnkit.artifacts.prepared import data_key, load_sequences, prepared, save_sequences
from attnkit.data.batching import Batch, Example, collate, sequence_lengths
from attnkit.data.tokenizers import SentencePieceTokenizer
from attnkit.families.forced import token_loss, validation_loss
from attnkit.families.translation.bleu import score_translations
from attnkit.families.translation.codec import Vocabs, encode_sources, vocabs_from_json, vocabs_to_json
from attnkit.families.translation.config import Rnn, TranslationRun
from attnkit.families.translation.data.corpus import Table, corpus_splits, split_files, split_pairs
from attnkit.families.translation.data.prepare import prepare_translation
from attnkit.families.translation.forcing import teacher_forcing_ratio
from attnkit.families.translation.metrics import attention_entropy
from attnkit.families.translation.model import build
from attnkit.families.translation.translate import detokenize, search_ids
from attnkit.models.transformer import Transformer
from attnkit.progress import counter


@dataclass
class TrainData:
    vocabs: Vocabs
    train: list[Example]
    valid: list[Example]
    valid_src: list[list[int]]  # every checked validation source, encoded, for BLEU
    valid_ref: list[str]


def load_data(run: TranslationRun, run_dir: Path, data_dir: str | None, vocabs: Vocabs | None = None) -> TrainData:
    """The prepared data of `run`: read from the cache, or checked, tokenized and encoded into it.

    `vocabs`: encode with these tokenizers and vocabularies (another run's, `attnkit train --init`)
    instead of building them from the data.
    """
    splits = corpus_splits(run.data, data_dir)
    files = [path for name in ("train", "valid") for path in split_files(splits[name])]
    settings = run.data.model_dump(mode="json", by_alias=True, exclude={"dir", "train", "valid", "test"})
    cache_dir = run_dir.parent / ".attnkit-cache"
    given = None if vocabs is None else vocabs_fingerprint(vocabs)
    key = data_key({"family": "translation", "data": settings, "max_src_len": run.decode.max_src_len, **({"vocabs": given} if given else {})}, files)
    folder = prepared(cache_dir, key, partial(_prepare, run, splits, cache_dir, vocabs))
    info = json.loads((folder / "data.json").read_text(encoding="utf-8"))
    ids = load_sequences(folder / "examples.safetensors")
    vocabs = vocabs_from_json(info["vocabs"], folder)
    return TrainData(vocabs, list(zip(ids["train_src"], ids["train_tgt"])), list(zip(ids["valid_src"], ids["valid_tgt"])),
                     ids["bleu_src"], info["valid_ref"])  # fmt: skip


def vocabs_fingerprint(vocabs: Vocabs) -> str:
    """sha256 of the vocabularies and tokenizers (the SentencePiece models' bytes included): part of the prepared data's key."""
    digest = hashlib.sha256(json.dumps([vocabs.src_vocab.to_json(), vocabs.tgt_vocab.to_json()], ensure_ascii=False).encode())
    for tokenizer in (vocabs.src_tokenizer, vocabs.tgt_tokenizer):
        digest.update(json.dumps(tokenizer.to_dict()).encode())
        if isinstance(tokenizer, SentencePieceTokenizer):
            digest.update(tokenizer.model_path.read_bytes())
    return digest.hexdigest()


def _prepare(run: TranslationRun, splits: dict, cache_dir: Path, vocabs: Vocabs | None, folder: Path) -> None:
    """Check, tokenize and encode the training and validation splits into `folder` (with `vocabs`, if given)."""
    d = run.data
    given = None if vocabs is None else (vocabs.src_tokenizer, vocabs.tgt_tokenizer, vocabs.src_vocab, vocabs.tgt_vocab)
    train, valid = (split_pairs(splits[name]) if isinstance(splits[name], Table) else splits[name] for name in ("train", "valid"))
    p = prepare_translation(
        train=train, valid=valid, tokenizer=d.tokenizer, vocab_size=d.vocab_size,
        joint=d.joint, max_len=d.max_len, cache_dir=cache_dir,
        check_policy=d.check.model_dump(by_alias=True), max_ratio=d.max_ratio, given=given,
    )  # fmt: skip
    vocabs = Vocabs(p.src_tokenizer, p.tgt_tokenizer, p.src_vocab, p.tgt_vocab)
    _, bleu_src = encode_sources(vocabs, [s for s, _ in p.valid_pairs], run.decode.max_src_len, "validation source")
    sequences = {"train_src": [s for s, _ in p.train], "train_tgt": [t for _, t in p.train],
                 "valid_src": [s for s, _ in p.valid], "valid_tgt": [t for _, t in p.valid], "bleu_src": bleu_src}  # fmt: skip
    save_sequences(folder / "examples.safetensors", sequences)
    info = {"vocabs": vocabs_to_json(vocabs, folder), "valid_ref": [t for _, t in p.valid_pairs]}
    (folder / "data.json").write_text(json.dumps(info, ensure_ascii=False), encoding="utf-8")


def batch_loss(model: nn.Module, batch: Batch, epsilon: float, **forcing: float) -> tuple[torch.Tensor, torch.Tensor]:
    """Summed label-smoothed loss and NLL of a teacher-forced batch (padding positions never projected).

    `forcing` is passed to `model.features` (an RNN decoder's `teacher_forcing` ratio).
    """
    features = model.features(batch.src, batch.src_keep, batch.tgt_in, **forcing)  # (B, T, D)
    bias = model.final_logits_bias if isinstance(model, Transformer) else None  # imported Marian models
    return token_loss(features, batch, model.output_weight, epsilon, bias)


def attention_health(model: nn.Module, batch: Batch) -> dict[str, float]:
    """Mean entropy (nats) of each attention kind and layer on a validation batch."""
    maps = model.attentions(batch.src, batch.src_keep, batch.tgt_in)
    src_keep = batch.src_keep[:, None, None, :]  # (B, 1, 1, S)
    health = {}
    for kind, layers, keep in (("enc", maps.encoder, src_keep), ("dec", maps.decoder_self, None), ("cross", maps.cross, src_keep)):
        for i, weights in enumerate(layers):
            health[f"entropy/{kind}{i}"] = attention_entropy(weights.float(), keep)
    return health


class TranslationTask:
    """Parallel text for an encoder-decoder; a batch's size is its number of target tokens."""

    unit = "tokens"

    def __init__(self, run: TranslationRun, data: TrainData) -> None:
        self.run, self.data = run, data
        self.vocabs = data.vocabs
        self.train_lengths = sequence_lengths(data.train)
        self.forcing = None  # the teacher-forcing schedule, for RNN decoders only
        if isinstance(run.model, Rnn):
            self.forcing = partial(teacher_forcing_ratio, **run.model.teacher_forcing.model_dump())

    def build_model(self) -> nn.Module:
        return build(self.run, self.vocabs)

    def collate(self, index: list[int]) -> Batch:
        return collate(self.data.train, index)

    def size(self, batch: Batch) -> int:
        return batch.n_tgt_tokens

    def loss(self, model: nn.Module, batch: Batch, step: int) -> torch.Tensor:
        """Summed label-smoothed loss of `batch` at 1-based update `step` (which sets teacher forcing)."""
        forcing = {} if self.forcing is None else {"teacher_forcing": self.forcing(step)}
        return batch_loss(model, batch, self.run.train.label_smoothing, **forcing)[0]

    @torch.inference_mode()
    def validate(self, model: nn.Module, device: torch.device) -> dict[str, float]:
        """Validation loss, perplexity, attention entropy and (optionally) BLEU and exact match."""
        run, data, t = self.run, self.data, self.run.train
        metrics = validation_loss(data.valid, partial(collate, data.valid), lambda batch: batch_loss(model, batch, t.label_smoothing), t, device)
        metrics.update(attention_health(model, collate(data.valid, list(range(min(32, len(data.valid))))).to(device)))
        if t.eval_decode:
            n = t.eval_max_sentences or len(data.valid_src)
            decode = run.decode.with_overrides(beam=t.eval_beam, nbest=1)
            with counter(n, "validating", unit="sent") as bar:
                found = search_ids(model, data.valid_src[:n], decode, device=device, progress=bar.update)
            hyps = [detokenize(data.vocabs, nbest[0]) for nbest in found]
            scores = score_translations(hyps, data.valid_ref[:n])
            metrics["bleu"] = scores["bleu"]
            metrics["exact"] = sum(h == r for h, r in zip(hyps, data.valid_ref[:n])) / max(n, 1)
        return metrics
