"""The translation task of the shared training loop: parallel text, a teacher-forced label-smoothed
loss summed over target tokens, and validation by loss, perplexity, attention entropy and BLEU."""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from pathlib import Path

import torch
from torch import nn

from attnkit.config.schema import Run
from attnkit.data.batching import Batch, TokenBatcher, collate, sequence_lengths
from attnkit.data.prepare import prepare_translation
from attnkit.decode.translate import SearchSettings, translate
from attnkit.evaluate.bleu import score_translations
from attnkit.evaluate.metrics import attention_entropy, perplexity
from attnkit.runs import Vocabs, build_for
from attnkit.train.corpus import corpus_splits
from attnkit.train.losses import label_smoothed_nll
from attnkit.train.precision import autocast
from attnkit.train.schedules import teacher_forcing_ratio

PAD = 0


@dataclass
class TrainData:
    vocabs: Vocabs
    train: list[tuple[list[int], list[int]]]
    valid: list[tuple[list[int], list[int]]]
    valid_src: list[str]  # raw validation text, for BLEU
    valid_ref: list[str]


def load_data(run: Run, run_dir: Path, data_dir: str | None) -> TrainData:
    """Read, check, tokenize and encode the training and validation splits."""
    splits = corpus_splits(run.data, data_dir)
    d = run.data
    prepared = prepare_translation(
        train=splits["train"], valid=splits["valid"], tokenizer=d.tokenizer, vocab_size=d.vocab_size,
        joint=d.joint, max_len=d.max_len, cache_dir=run_dir.parent / ".attnkit-cache",
        check_policy=d.check.model_dump(by_alias=True), max_ratio=d.max_ratio,
    )  # fmt: skip
    vocabs = Vocabs(prepared.src_tokenizer, prepared.tgt_tokenizer, prepared.src_vocab, prepared.tgt_vocab)
    pairs = prepared.valid_pairs
    return TrainData(vocabs, prepared.train, prepared.valid, [s for s, _ in pairs], [t for _, t in pairs])


def batch_loss(model: nn.Module, batch: Batch, epsilon: float, **forcing: float) -> tuple[torch.Tensor, torch.Tensor]:
    """Summed label-smoothed loss and NLL of a teacher-forced batch (padding positions never projected).

    `forcing` is passed to `model.features` (an RNN decoder's `teacher_forcing` ratio).
    """
    features = model.features(batch.src, batch.src_keep, batch.tgt_in, **forcing)  # (B, T, D)
    keep = batch.tgt_out != PAD  # (B, T)
    return label_smoothed_nll(features[keep], batch.tgt_out[keep], weight=model.output_weight, epsilon=epsilon, ignore_index=PAD)


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

    def __init__(self, run: Run, run_dir: Path, data_dir: str | None) -> None:
        self.run = run
        self.data = load_data(run, run_dir, data_dir)
        self.vocabs = self.data.vocabs
        self.train_lengths = sequence_lengths(self.data.train)
        self.forcing = None  # the teacher-forcing schedule, for RNN decoders only
        if run.model.kind == "rnn":
            self.forcing = partial(teacher_forcing_ratio, **run.model.teacher_forcing.model_dump())

    def build_model(self) -> nn.Module:
        return build_for(self.run, self.vocabs)

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
        batcher = TokenBatcher(*sequence_lengths(data.valid), max_tokens=t.max_tokens, shuffle=False, seed=0)
        loss_sum = nll_sum = n_tokens = 0.0
        for index in batcher.epoch(0):
            batch = collate(data.valid, index).to(device)
            with autocast(device, t.precision):
                loss, nll = batch_loss(model, batch, t.label_smoothing)
            loss_sum, nll_sum, n_tokens = loss_sum + loss.item(), nll_sum + nll.item(), n_tokens + batch.n_tgt_tokens
        metrics = {"loss": loss_sum / n_tokens, "ppl": perplexity(nll_sum, n_tokens)}
        metrics.update(attention_health(model, collate(data.valid, list(range(min(32, len(data.valid))))).to(device)))
        if t.eval_bleu:
            n = t.eval_max_sentences or len(data.valid_src)
            d = run.decode
            settings = SearchSettings(beam=t.eval_beam, alpha=d.alpha, max_len_a=d.max_len_a, max_len_b=d.max_len_b, batch_size=d.batch_size)
            hyps = [nbest[0].text for nbest in translate(model, data.vocabs, data.valid_src[:n], settings, device=device)]
            scores = score_translations(hyps, data.valid_ref[:n])
            metrics["bleu"] = scores["bleu"]
            metrics["exact"] = sum(h == r for h, r in zip(hyps, data.valid_ref[:n])) / max(n, 1)
        return metrics
