"""The training loop, as one plain function: `train(run, run_dir) -> TrainState`.

In order: prepare data and vocabularies, build the model, then for each group of `accum` token
batches: forward (autocast), label-smoothed loss, backward, clip, set the learning rate from the
schedule, optimizer step; every `eval_every` updates: validation loss, perplexity and BLEU, attention
entropy, a checkpoint (best and last K kept) and early stopping. `--resume` restores weights,
optimizer, RNG states and the position in the epoch, so a resumed run equals an uninterrupted one.
"""

from __future__ import annotations

import json
import logging
import math
import signal
import threading
import time
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Callable

import torch
from torch import nn

from attnkit.config.schema import Run
from attnkit.data.batching import Batch, TokenBatcher, collate, sequence_lengths
from attnkit.data.prepare import prepare_translation
from attnkit.decode.translate import SearchSettings, translate
from attnkit.errors import CheckpointError, TrainingError
from attnkit.evaluate.bleu import score_translations
from attnkit.evaluate.metrics import attention_entropy, perplexity
from attnkit.runs import Vocabs, build_for, read_run, write_run
from attnkit.train.checkpoint import find_checkpoint, load_trainer, load_weights, prune, save_checkpoint
from attnkit.train.corpus import corpus_splits
from attnkit.train.losses import label_smoothed_nll
from attnkit.train.metrics_log import MetricsLog
from attnkit.train.precision import autocast, grad_scaler, pick_device
from attnkit.train.schedules import make_schedule, teacher_forcing_ratio
from attnkit.train.state import TrainState

log = logging.getLogger("attnkit")
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


def model_width(run: Run) -> int:
    """d_model of the Noam schedule: the Transformer's d_model, an RNN's hidden size."""
    match run.model.kind:
        case "transformer":
            return run.model.d_model
        case "rnn":
            return run.model.hidden
    raise AssertionError(f"unhandled model kind {run.model.kind}")


def batch_loss(model: nn.Module, batch: Batch, epsilon: float, **forcing: float) -> tuple[torch.Tensor, torch.Tensor]:
    """Summed label-smoothed loss and NLL of a teacher-forced batch (padding positions never projected).

    `forcing` is passed to `model.features` (an RNN decoder's `teacher_forcing` ratio).
    """
    features = model.features(batch.src, batch.src_keep, batch.tgt_in, **forcing)  # (B, T, D)
    keep = batch.tgt_out != PAD  # (B, T)
    return label_smoothed_nll(features[keep], batch.tgt_out[keep], weight=model.output_weight, epsilon=epsilon, ignore_index=PAD)


class Trainer:
    """The pieces one update needs; `update` is the whole step."""

    def __init__(self, run: Run, model: nn.Module, device: torch.device) -> None:
        t = run.train
        self.run, self.model, self.device = run, model, device
        self.optimizer = torch.optim.Adam(model.parameters(), lr=0.0, betas=t.betas, eps=t.eps, weight_decay=t.weight_decay)
        s = t.schedule
        match s.kind:
            case "noam":
                self.schedule = make_schedule("noam", d_model=model_width(run), warmup=s.warmup, scale=s.lr)
            case "inverse_sqrt":
                self.schedule = make_schedule("inverse_sqrt", peak_lr=s.lr, warmup=s.warmup)
            case "constant":
                self.schedule = make_schedule("constant", lr=s.lr)
        self.scaler = grad_scaler(device, t.precision)
        self.forcing = None  # the teacher-forcing schedule, for RNN decoders only
        if run.model.kind == "rnn":
            self.forcing = partial(teacher_forcing_ratio, **run.model.teacher_forcing.model_dump())

    def forcing_kwargs(self, step: int) -> dict[str, float]:
        """Extra arguments of `model.features` at 1-based update `step`."""
        return {} if self.forcing is None else {"teacher_forcing": self.forcing(step)}

    def update(self, batches: list[Batch], state: TrainState) -> float | None:
        """One optimizer update over `batches` (accumulated); returns the loss per token, or None if skipped."""
        t = self.run.train
        n_tokens = sum(b.n_tgt_tokens for b in batches)
        total = 0.0
        forcing = self.forcing_kwargs(state.step + 1)
        for batch in batches:
            batch = batch.to(self.device)
            with autocast(self.device, t.precision):
                loss, _ = batch_loss(self.model, batch, t.label_smoothing, **forcing)
            self.scaler.scale(loss / n_tokens).backward()
            total += loss.item()
        if not math.isfinite(total):
            self.optimizer.zero_grad(set_to_none=True)
            state.bad_steps_in_row += 1
            state.skipped_steps += 1
            if state.bad_steps_in_row >= t.max_bad_steps:
                raise TrainingError(f"loss was NaN/inf for {state.bad_steps_in_row} steps in a row (step {state.step + 1}); lower the learning rate or check the data")
            log.warning("step %d: loss is %s, update skipped", state.step + 1, total)
            return None
        state.bad_steps_in_row = 0
        if t.clip_norm > 0:
            self.scaler.unscale_(self.optimizer)
            nn.utils.clip_grad_norm_(self.model.parameters(), t.clip_norm)
        lr = self.schedule(state.step + 1)
        for group in self.optimizer.param_groups:
            group["lr"] = lr
        self.scaler.step(self.optimizer)
        self.scaler.update()
        self.optimizer.zero_grad(set_to_none=True)
        state.step += 1
        state.target_tokens += n_tokens
        return total / n_tokens


@torch.inference_mode()
def validate(model: nn.Module, data: TrainData, run: Run, device: torch.device) -> dict[str, float]:
    """Validation loss, perplexity, attention entropy and (optionally) BLEU and exact match."""
    model.eval()
    t = run.train
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
        settings = SearchSettings(beam=t.eval_beam, alpha=run.decode.alpha, max_len_a=run.decode.max_len_a, max_len_b=run.decode.max_len_b, batch_size=run.decode.batch_size)
        hyps = [nbest[0].text for nbest in translate(model, data.vocabs, data.valid_src[:n], settings, device=device)]
        scores = score_translations(hyps, data.valid_ref[:n])
        metrics["bleu"] = scores["bleu"]
        metrics["exact"] = sum(h == r for h, r in zip(hyps, data.valid_ref[:n])) / max(n, 1)
    model.train()
    return metrics


def attention_health(model: nn.Module, batch: Batch) -> dict[str, float]:
    """Mean entropy (nats) of each attention kind and layer on a validation batch."""
    maps = model.attentions(batch.src, batch.src_keep, batch.tgt_in)
    src_keep = batch.src_keep[:, None, None, :]  # (B, 1, 1, S)
    health = {}
    for kind, layers, keep in (("enc", maps.encoder, src_keep), ("dec", maps.decoder_self, None), ("cross", maps.cross, src_keep)):
        for i, weights in enumerate(layers):
            health[f"entropy/{kind}{i}"] = attention_entropy(weights.float(), keep)
    return health


def _start(run: Run, run_dir: Path, data: TrainData, resume: bool) -> None:
    """Refuse to overwrite a trained run; on resume, check the data gives the run's vocabularies."""
    has_checkpoints = (run_dir / "checkpoints").is_dir() and any((run_dir / "checkpoints").iterdir())
    if not resume:
        if has_checkpoints:
            raise CheckpointError(f"{run_dir}: already holds checkpoints; pass --resume to continue it, or choose another --out")
        write_run(run_dir, run, data.vocabs)
        return
    _, saved = read_run(run_dir)
    if saved.src_vocab.to_json() != data.vocabs.src_vocab.to_json() or saved.tgt_vocab.to_json() != data.vocabs.tgt_vocab.to_json():
        raise CheckpointError(f"{run_dir}/run.json: the vocabulary built from the data differs from the run's (data or tokenizer settings changed)")


def _rng_state(device: torch.device) -> dict[str, torch.Tensor]:
    rng = {"torch": torch.get_rng_state()}
    if device.type == "cuda":
        rng["cuda"] = torch.cuda.get_rng_state(device)
    return rng


def _resume(run_dir: Path, trainer: Trainer) -> TrainState:
    checkpoint = find_checkpoint(run_dir, "last")
    load_weights(trainer.model, checkpoint)
    saved, rng = load_trainer(checkpoint, trainer.optimizer)
    torch.set_rng_state(rng["torch"])
    if "cuda" in rng and trainer.device.type == "cuda":
        torch.cuda.set_rng_state(rng["cuda"], trainer.device)
    log.info("resumed from %s", checkpoint)
    return TrainState.from_dict(saved["train_state"])


def _is_better(run: Run, metrics: dict[str, float], best: float | None) -> bool:
    if run.train.early_stopping == "bleu" and "bleu" in metrics:
        return best is None or metrics["bleu"] > best
    return best is None or -metrics["loss"] > best


def _evaluate_and_save(run: Run, run_dir: Path, trainer: Trainer, data: TrainData, state: TrainState) -> dict[str, float]:
    """Validate (its time counts as training wall clock), track the best, checkpoint, prune."""
    started = time.perf_counter()
    metrics = validate(trainer.model, data, run, trainer.device)
    state.elapsed += time.perf_counter() - started
    name = f"step_{state.step:08d}"
    if _is_better(run, metrics, state.best):
        state.best = metrics["bleu"] if run.train.early_stopping == "bleu" and "bleu" in metrics else -metrics["loss"]
        state.best_checkpoint, state.evals_without_improvement = name, 0
    else:
        state.evals_without_improvement += 1
    patience = run.train.patience
    state.stopped_early = patience is not None and state.evals_without_improvement >= patience
    _save(run, run_dir, trainer, state, metrics)
    return metrics


def _save(run: Run, run_dir: Path, trainer: Trainer, state: TrainState, metrics: dict[str, float]) -> None:
    """Checkpoint the current step (atomically), then keep the best and the last K."""
    save_checkpoint(run_dir, state.step, trainer.model, state={"train_state": state.to_dict(), "metrics": metrics},
                    optimizer=trainer.optimizer, rng=_rng_state(trainer.device))  # fmt: skip
    (run_dir / "best.json").write_text(json.dumps({"checkpoint": state.best_checkpoint, "best": state.best}))
    prune(run_dir, run.train.keep_last, keep={state.best_checkpoint or ""})


class _StopOnSignal:
    """SIGINT/SIGTERM while training: finish the current update, checkpoint, return; a second one aborts."""

    SIGNALS = (signal.SIGINT, signal.SIGTERM)

    def __init__(self) -> None:
        self.received: str | None = None
        self.previous: dict[int, object] = {}

    def __enter__(self) -> "_StopOnSignal":
        if threading.current_thread() is threading.main_thread():  # handlers can only be set there
            self.previous = {s: signal.signal(s, self._handle) for s in self.SIGNALS}
        return self

    def _handle(self, signum: int, frame: object) -> None:
        if self.received is not None:
            raise KeyboardInterrupt(f"second {signal.Signals(signum).name}")
        self.received = signal.Signals(signum).name
        log.warning("%s: stopping after this update and writing a checkpoint (send it again to abort)", self.received)

    def __exit__(self, *exc: object) -> None:
        for s, handler in self.previous.items():
            signal.signal(s, handler)


def _done(run: Run, state: TrainState) -> bool:
    t = run.train
    return (
        state.stopped_early
        or (t.max_steps is not None and state.step >= t.max_steps)
        or (t.max_epochs is not None and state.epoch >= t.max_epochs)
        or (t.max_minutes is not None and state.elapsed >= 60 * t.max_minutes)
    )


def train(
    run: Run,
    run_dir: str | Path,
    *,
    resume: bool = False,
    data_dir: str | None = None,
    on_event: Callable[[str, TrainState, dict], None] | None = None,
) -> TrainState:
    """Train `run` into `run_dir`; `on_event(kind, state, info)` reports "step" and "valid" events."""
    run_dir = Path(run_dir)
    t = run.train
    device = pick_device(t.device)
    if t.threads:
        torch.set_num_threads(t.threads)
    torch.manual_seed(t.seed)
    data = load_data(run, run_dir, data_dir)
    _start(run, run_dir, data, resume)
    model = build_for(run, data.vocabs).to(device)
    trainer = Trainer(run, model, device)
    state = _resume(run_dir, trainer) if resume else TrainState()
    state.interrupted = None
    batcher = TokenBatcher(*sequence_lengths(data.train), max_tokens=t.max_tokens, shuffle=True, seed=t.seed)
    model.train()
    emit = on_event or (lambda kind, state, info: None)
    metrics_log = MetricsLog(run_dir)
    last_eval = state.step

    def evaluate() -> None:
        nonlocal last_eval
        if state.step == last_eval:  # already validated and saved at this step
            return
        metrics = _evaluate_and_save(run, run_dir, trainer, data, state)
        last_eval = state.step
        metrics_log.write({"kind": "valid", "step": state.step, "elapsed": state.elapsed, **metrics})
        emit("valid", state, metrics)

    with _StopOnSignal() as stop:
        _loop(run, state, trainer, data, batcher, stop, emit, metrics_log, evaluate)
    if stop.received:  # checkpoint without validating, to exit quickly (a cluster's grace period)
        state.interrupted = stop.received
        if state.step != last_eval:
            _save(run, run_dir, trainer, state, {})
    else:
        evaluate()
    metrics_log.close()
    return state


def _loop(run: Run, state: TrainState, trainer: Trainer, data: TrainData, batcher: TokenBatcher, stop: _StopOnSignal,
          emit: Callable, metrics_log: MetricsLog, evaluate: Callable[[], None]) -> None:  # fmt: skip
    """Updates until the run is done or a signal asks to stop; validation every `eval_every`."""
    t = run.train
    while not _done(run, state) and not stop.received:
        epoch = batcher.epoch(state.epoch)
        while state.batch_in_epoch < len(epoch) and not _done(run, state) and not stop.received:
            started = time.perf_counter()
            group = epoch[state.batch_in_epoch : state.batch_in_epoch + t.accum]
            batches = [collate(data.train, index) for index in group]
            loss = trainer.update(batches, state)
            state.batch_in_epoch += len(group)
            seconds = time.perf_counter() - started
            state.elapsed += seconds
            info = {"loss": loss, "lr": trainer.optimizer.param_groups[0]["lr"], "tokens": sum(b.n_tgt_tokens for b in batches), "seconds": seconds}
            emit("step", state, info)
            if state.step % t.log_every == 0 and loss is not None:
                metrics_log.write({"kind": "train", "step": state.step, "epoch": state.epoch, "elapsed": state.elapsed, **info})
            if state.step % t.eval_every == 0 and not stop.received:
                evaluate()
        if state.batch_in_epoch >= len(epoch):
            state.epoch, state.batch_in_epoch = state.epoch + 1, 0
