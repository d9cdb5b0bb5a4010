"""The classification task of the shared training loop (self-attentive sentence embeddings, Lin et
al. 2017): labelled sentences or sentence pairs, cross entropy plus the penalty coef * P summed over
examples, and validation by loss, accuracy, macro-F1 and the overlap of the attention hops."""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, fields, replace
from functools import partial
from pathlib import Path

import torch
from torch import nn

from attnkit.artifacts.prepared import data_key, load_sequences, prepared, save_sequences
from attnkit.attention.structured import frobenius_penalty
from attnkit.data.batching import pad
from attnkit.errors import DataError
from attnkit.evaluate.metrics import accuracy
from attnkit.families.classification.codec import EncodedText, SentenceVocabs, build_vocab, encode_examples, vocabs_from_json, vocabs_to_json
from attnkit.families.classification.config import SentenceRun
from attnkit.families.classification.corpus import classify_files, classify_splits
from attnkit.families.classification.metrics import hop_overlap, macro_f1
from attnkit.families.classification.model import build, load_word_vectors
from attnkit.families.validation import validation_sums
from attnkit.progress import counter

log = logging.getLogger("attnkit")
PREPARE_STEPS = 4  # reading, vocabulary, encoding train, encoding valid


@dataclass
class TextBatch:
    """Padded sentences (and hypotheses of pairs) with their class ids; keep = True on real tokens."""

    tokens: torch.Tensor  # (B, S)
    keep: torch.Tensor  # (B, S)
    labels: torch.Tensor  # (B,)
    tokens2: torch.Tensor | None = None  # (B, S2)
    keep2: torch.Tensor | None = None  # (B, S2)

    def to(self, device: torch.device | str) -> TextBatch:
        values = {f.name: getattr(self, f.name) for f in fields(self)}
        return replace(self, **{k: v.to(device) for k, v in values.items() if v is not None})


def collate_texts(examples: list[EncodedText], index: list[int]) -> TextBatch:
    """Pad the chosen examples into a `TextBatch` (on the CPU)."""
    chosen = [examples[i] for i in index]
    tokens, keep = pad([e.ids for e in chosen])  # (B, S)
    labels = torch.tensor([e.label for e in chosen])  # (B,)
    if chosen[0].ids2 is None:
        return TextBatch(tokens, keep, labels)
    return TextBatch(tokens, keep, labels, *pad([e.ids2 for e in chosen]))  # (B, S2)


def text_lengths(examples: list[EncodedText]) -> tuple[list[int], list[int]]:
    """Lengths for `TokenBatcher`: the sentence's and the hypothesis' (1 for single sentences)."""
    return [len(e.ids) for e in examples], [len(e.ids2) if e.ids2 is not None else 1 for e in examples]


def load_examples(run: SentenceRun, run_dir: Path, data_dir: str | None) -> tuple[SentenceVocabs, list[EncodedText], list[EncodedText]]:
    """The prepared examples of `run`: read from the cache, or read, counted and encoded into it."""
    settings = run.data.model_dump(mode="json", exclude={"dir", "train", "valid"})
    key = data_key({"family": "classification", "data": settings}, classify_files(run.data, data_dir))
    folder = prepared(run_dir.parent / ".attnkit-cache", key, partial(_prepare, run, data_dir))
    vocabs = vocabs_from_json(json.loads((folder / "data.json").read_text(encoding="utf-8")), folder)
    ids = load_sequences(folder / "examples.safetensors")
    pair = run.model.pair != "none"
    splits = [[EncodedText(i, label, i2 if pair else None) for i, [label], i2 in zip(ids[f"{s}_ids"], ids[f"{s}_labels"], ids[f"{s}_ids2"])]
              for s in ("train", "valid")]  # fmt: skip
    return vocabs, splits[0], splits[1]


def _prepare(run: SentenceRun, data_dir: str | None, folder: Path) -> None:
    """Read, count and encode the training and validation examples into `folder`."""
    d = run.data
    sequences = {}
    with counter(PREPARE_STEPS, "preparing data", unit="step") as bar:  # the stage it is in, in the postfix
        bar.set_postfix_str("reading")
        train, valid, labels = classify_splits(d, data_dir)
        bar.update(1)
        bar.set_postfix_str("vocabulary")
        vocab = build_vocab(train, min_freq=d.min_freq, max_size=d.max_vocab, lowercase=d.lowercase, drop_symbols=d.drop_symbols)
        bar.update(1)
        for name, examples in (("train", train), ("valid", valid)):
            bar.set_postfix_str(f"encoding {name}")
            encoded = encode_examples(examples, vocab, labels, lowercase=d.lowercase, drop_symbols=d.drop_symbols)
            sequences.update({f"{name}_ids": [e.ids for e in encoded], f"{name}_ids2": [e.ids2 or [] for e in encoded],
                              f"{name}_labels": [[e.label] for e in encoded]})  # fmt: skip
            bar.update(1)
    save_sequences(folder / "examples.safetensors", sequences)
    (folder / "data.json").write_text(json.dumps(vocabs_to_json(SentenceVocabs(vocab, labels), folder)), encoding="utf-8")


class ClassificationTask:
    """Labelled text for a `SelfAttentiveClassifier`; a batch's size is its number of examples."""

    unit = "examples"

    def __init__(self, run: SentenceRun, run_dir: Path, data_dir: str | None) -> None:
        vectors = run.model.word_vectors
        if vectors is not None and not Path(vectors).expanduser().is_file():  # before the data is read
            raise DataError(f"{vectors}: no such file (model.word_vectors)")
        self.run = run
        self.vocabs, self.train, self.valid = load_examples(run, run_dir, data_dir)
        self.train_lengths = text_lengths(self.train)
        log.info("%d training and %d validation examples, %d words, %d classes",
                 len(self.train), len(self.valid), len(self.vocabs.vocab), len(self.vocabs.labels))  # fmt: skip

    def build_model(self) -> nn.Module:
        """The classifier; its embedding filled from `model.word_vectors` when given (the words it lacks
        at zero with `model.missing_vectors: zero`)."""
        model = build(self.run, self.vocabs)
        path = self.run.model.word_vectors
        if path is not None:
            if self.run.model.missing_vectors == "zero":
                with torch.no_grad():
                    model.embedding.weight.zero_()  # (V, E): the file's vectors fill their rows next
            tokens = self.vocabs.vocab.to_json()["tokens"]
            found = load_word_vectors(path, tokens, model.embedding)
            log.info("%s: vectors for %d of %d words", path, found, len(tokens))
        return model

    def collate(self, index: list[int]) -> TextBatch:
        return collate_texts(self.train, index)

    def size(self, batch: TextBatch) -> int:
        return batch.labels.numel()

    def loss(self, model: nn.Module, batch: TextBatch, step: int) -> torch.Tensor:
        """Cross entropy + coef * P (Lin et al. 2017, Sec. 2.2), summed over the batch."""
        output = model(batch.tokens, batch.keep, batch.tokens2, batch.keep2)
        return model.loss(output, batch.labels, self.run.model.coef) * batch.labels.numel()

    @torch.inference_mode()
    def validate(self, model: nn.Module, device: torch.device) -> dict[str, float]:
        """Validation loss (cross entropy + coef * P), accuracy, macro-F1; with attention pooling also
        the mean penalty P and the mean pairwise overlap of the hops (`hop_overlap`)."""
        coef, pred, gold = self.run.model.coef, [], []

        def forward(batch: TextBatch) -> tuple:
            output = model(batch.tokens, batch.keep, batch.tokens2, batch.keep2)
            return output, model.loss(output, batch.labels, coef)

        def measure(batch: TextBatch, out: tuple) -> dict[str, float]:
            output, loss = out
            pred.extend(output.logits.argmax(dim=-1).tolist())
            gold.extend(batch.labels.tolist())
            sums = {"loss": loss.item() * len(batch.labels)}
            if output.attention is not None:  # the (first) sentence's hops
                a = output.attention.float()  # (B, R, S)
                sums.update(penalty=frobenius_penalty(a).sum().item(), overlap=hop_overlap(a).sum().item())
            return sums

        sums = validation_sums(text_lengths(self.valid), partial(collate_texts, self.valid), forward, measure, self.run.train, device)
        n = len(gold)
        metrics = {"loss": sums["loss"] / n, "accuracy": accuracy(pred, gold), "macro_f1": macro_f1(pred, gold, len(self.vocabs.labels))}
        if model.attention is not None:
            metrics.update(penalty=sums["penalty"] / n, overlap=sums["overlap"] / n)
        return metrics
