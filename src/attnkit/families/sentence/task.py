"""The classification task of the shared training loop (self-attentive sentence embeddings, Lin et
al. 2017): labelled sentences or sentence pairs, cross entropy plus the penalty coef * P summed over
examples, and validation by loss, accuracy, macro-F1 and the overlap of the attention hops."""

from __future__ import annotations

import logging
from dataclasses import dataclass, fields, replace
from pathlib import Path

import torch
from torch import nn

from attnkit.attention.structured import frobenius_penalty
from attnkit.data.batching import TokenBatcher, pad
from attnkit.evaluate.metrics import accuracy, hop_overlap, macro_f1
from attnkit.families.sentence.codec import EncodedText, SentenceVocabs, build_vocab, encode_examples
from attnkit.families.sentence.config import SentenceRun
from attnkit.families.sentence.corpus import classify_splits
from attnkit.families.sentence.model import build, load_word_vectors
from attnkit.precision import autocast

log = logging.getLogger("attnkit")


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


class ClassificationTask:
    """Labelled text for a `SelfAttentiveClassifier`; a batch's size is its number of examples."""

    unit = "examples"

    def __init__(self, run: SentenceRun, run_dir: Path, data_dir: str | None) -> None:
        d = run.data
        self.run = run
        train, valid, labels = classify_splits(d, data_dir)
        vocab = build_vocab(train, min_freq=d.min_freq, max_size=d.max_vocab, lowercase=d.lowercase)
        self.vocabs = SentenceVocabs(vocab, labels)
        self.train = encode_examples(train, vocab, labels, lowercase=d.lowercase)
        self.valid = encode_examples(valid, vocab, labels, lowercase=d.lowercase)
        self.train_lengths = text_lengths(self.train)
        log.info("%d training and %d validation examples, %d words, %d classes", len(self.train), len(self.valid), len(vocab), len(labels))

    def build_model(self) -> nn.Module:
        """The classifier; its embedding filled from `model.word_vectors` when given."""
        model = build(self.run, self.vocabs)
        path = self.run.model.word_vectors
        if path is not None:
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
        t, coef = self.run.train, self.run.model.coef
        batcher = TokenBatcher(*text_lengths(self.valid), max_tokens=t.max_tokens, max_sentences=t.max_sentences, shuffle=False, seed=0)
        loss_sum, penalty_sum, overlap_sum, pred, gold = 0.0, 0.0, 0.0, [], []
        for index in batcher.epoch(0):
            batch = collate_texts(self.valid, index).to(device)
            with autocast(device, t.precision):
                output = model(batch.tokens, batch.keep, batch.tokens2, batch.keep2)
                loss_sum += model.loss(output, batch.labels, coef).item() * len(index)
            pred += output.logits.argmax(dim=-1).tolist()
            gold += batch.labels.tolist()
            if output.attention is not None:  # the (first) sentence's hops
                a = output.attention.float()  # (B, R, S)
                penalty_sum += frobenius_penalty(a).sum().item()
                overlap_sum += hop_overlap(a).sum().item()
        n = len(gold)
        metrics = {"loss": loss_sum / n, "accuracy": accuracy(pred, gold), "macro_f1": macro_f1(pred, gold, len(self.vocabs.labels))}
        if model.attention is not None:
            metrics.update(penalty=penalty_sum / n, overlap=overlap_sum / n)
        return metrics
