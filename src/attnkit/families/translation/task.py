"""The translation task of the shared training loop: parallel text, a teacher-forced label-smoothed
loss summed over target tokens, and validation by loss, perplexity, attention entropy and BLEU.

The data is prepared once (`attnkit.artifacts.prepared`): checked, tokenized and encoded, the
validation sources included, so `--resume`, every DDP rank and every validation reuse the ids.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import torch
from torch import nn

from attnkit.artifacts.prepared import data_key, load_sequences, prepared, save_sequences
from attnkit.data.batching import Batch, Example, collate, sequence_lengths
from attnkit.evaluate.metrics import attention_entropy
from attnkit.families.forced import token_loss, validation_loss
from attnkit.families.translation.bleu import score_translations
from attnkit.families.translation.codec import Vocabs, encode_sources, vocabs_from_json, vocabs_to_json
from attnkit.families.translation.config import Rnn, TranslationRun
from attnkit.families.translation.corpus import corpus_splits
from attnkit.families.translation.forcing import teacher_forcing_ratio
from attnkit.families.translation.model import build
from attnkit.families.translation.prepare import prepare_translation
from attnkit.families.translation.translate import detokenize, search_ids


@dataclass
class TrainData:
    vocabs: Vocabs
    train: list[Example]
    valid: list[Example]
    valid_src: list[list[int]]  # every checked validation source, encoded, for BLEU
    valid_ref: list[str]


def load_data(run: TranslationRun, run_dir: Path, data_dir: str | None) -> TrainData:
    """The prepared data of `run`: read from the cache, or checked, tokenized and encoded into it."""
    splits = corpus_splits(run.data, data_dir)
    files = [path for name in ("train", "valid") if isinstance(splits[name], tuple) for path in splits[name]]
    settings = run.data.model_dump(mode="json", by_alias=True, exclude={"dir", "train", "valid", "test"})
    cache_dir = run_dir.parent / ".attnkit-cache"
    key = data_key({"family": "translation", "data": settings, "max_src_len": run.decode.max_src_len}, files)
    folder = prepared(cache_dir, key, partial(_prepare, run, splits, cache_dir))
    info = json.loads((folder / "data.json").read_text(encoding="utf-8"))
    ids = load_sequences(folder / "examples.safetensors")
    vocabs = vocabs_from_json(info["vocabs"], folder)
    return TrainData(vocabs, list(zip(ids["train_src"], ids["train_tgt"])), list(zip(ids["valid_src"], ids["valid_tgt"])),
                     ids["bleu_src"], info["valid_ref"])  # fmt: skip


def _prepare(run: TranslationRun, splits: dict, cache_dir: Path, folder: Path) -> None:
    """Check, tokenize and encode the training and validation splits into `folder`."""
    d = run.data
    p = prepare_translation(
        train=splits["train"], valid=splits["valid"], tokenizer=d.tokenizer, vocab_size=d.vocab_size,
        joint=d.joint, max_len=d.max_len, cache_dir=cache_dir,
        check_policy=d.check.model_dump(by_alias=True), max_ratio=d.max_ratio,
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
    return token_loss(features, batch, model.output_weight, epsilon)


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
            hyps = [detokenize(data.vocabs, nbest[0]) for nbest in search_ids(model, data.valid_src[:n], decode, device=device)]
            scores = score_translations(hyps, data.valid_ref[:n])
            metrics["bleu"] = scores["bleu"]
            metrics["exact"] = sum(h == r for h, r in zip(hyps, data.valid_ref[:n])) / max(n, 1)
        return metrics
