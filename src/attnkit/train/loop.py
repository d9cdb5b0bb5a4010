"""The training loop, as one plain function: `train(run, run_dir) -> TrainState`.

In order: the task prepares data and vocabularies and builds the model, then for each group of
`accum` batches: forward (autocast), the task's loss, backward, clip, set the learning rate from the
schedule, optimizer step; every `eval_every` updates (and at `eval_first`): the task's validation metrics, a checkpoint
(best and last K kept) and early stopping. `--resume` restores weights, optimizer, RNG states and
the position in the epoch, so a resumed run equals an uninterrupted one.

Model families differ only in their `Task` (`attnkit.families.protocol`), which the run's family
(`attnkit.families.run_family_of(run)`: its `task`, else its `model.kind`) prepares. Under torchrun the same function trains one
data-parallel rank (`train/distributed.py`): its shard of the batches, gradients all-reduced, files
written and validation run by rank 0 only. Rank 0 holds the run folder's lock (`artifacts/lock.py`)
for the whole job, so a second run into the same folder is refused.
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
import signal
import threading
import time
from collections.abc import Callable
from pathlib import Path

import torch
from torch import nn

from attnkit import extras
from attnkit.allocator import limit_primitive_cache
from attnkit.artifacts.checkpoint import (
    checkpoint_dirs,
    find_checkpoint,
    load_trainer,
    load_weights,
    prune,
    remove_leftovers,
    save_checkpoint,
)  # fmt: skip
from attnkit.artifacts.lock import locked
from attnkit.artifacts.runs import read_run, write_run
from attnkit.config.schema import RunBase as Run
from attnkit.data.batching import TokenBatcher
from attnkit.errors import CheckpointError, TrainingError
from attnkit.families import run_family_of
from attnkit.families.protocol import Family, Task
from attnkit.io import atomic_write_text
from attnkit.precision import autocast, grad_scaler, pick_device
from attnkit.train import distributed
from attnkit.train.init import load_init, make_task, start_from
from attnkit.train.metrics_log import MetricsLog
from attnkit.train.schedules import make_schedule
from attnkit.train.state import TrainState

log = logging.getLogger("attnkit")


class Trainer:
    """The pieces one update needs; `update` is the whole step."""

    def __init__(self, run: Run, model: nn.Module, device: torch.device, task: Task, world: distributed.World = distributed.World()) -> None:
        t = run.train
        self.run, self.model, self.device, self.task, self.world = run, model, device, task, world
        self.replica = distributed.Replica(model, world)  # computes the loss (through DDP on several ranks)
        # fused: one kernel for the whole step, 5x faster than the default per-parameter loop on a CPU (docs/training.md)
        fused = device.type in ("cpu", "cuda")
        self.optimizer = torch.optim.Adam(model.parameters(), lr=0.0, betas=t.betas, eps=t.eps, weight_decay=t.weight_decay, amsgrad=t.amsgrad, fused=fused)
        s = t.schedule
        match s.kind:
            case "noam":
                self.schedule = make_schedule("noam", d_model=run.model.width, warmup=s.warmup, scale=s.lr)
            case "inverse_sqrt":
                self.schedule = make_schedule("inverse_sqrt", peak_lr=s.lr, warmup=s.warmup)
            case "constant":
                self.schedule = make_schedule("constant", lr=s.lr)
            case "cosine":
                self.schedule = make_schedule("cosine", peak_lr=s.lr, warmup=s.warmup, total=s.total)
        self.scaler = grad_scaler(device, t.precision)

    def update(self, batches: list, state: TrainState) -> float | None:
        """One optimizer update over `batches` (accumulated); returns the loss per token (or example), or None if skipped."""
        t = self.run.train
        n_local = sum(self.task.size(b) for b in batches)
        n_tokens = int(self.world.sum([n_local], self.device)[0])  # over all ranks
        total = 0.0
        for i, batch in enumerate(batches):
            batch = batch.to(self.device)
            with self.replica.sync(i == len(batches) - 1):  # gradients are all-reduced after the last micro-batch
                with autocast(self.device, t.precision):
                    loss = self.replica(self.task.loss, batch, state.step + 1)
                # DDP averages over ranks; x world size makes it (sum over every rank's items) / n_tokens
                self.scaler.scale(loss * self.world.size / n_tokens).backward()
            total += loss.item()
        total = self.world.sum([total], self.device)[0]  # every rank skips a NaN/inf update together
        if not math.isfinite(total):
            self.optimizer.zero_grad(set_to_none=True)
            state.bad_steps_in_row += 1
            state.skipped_steps += 1
            if state.bad_steps_in_row >= t.max_bad_steps:
                raise TrainingError(
                    f"loss was NaN/inf for {state.bad_steps_in_row} steps in a row (step {state.step + 1}); lower the learning rate or check the data"
                )
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


def validate(model: nn.Module, task: Task, device: torch.device) -> dict[str, float]:
    """The task's validation metrics, with the model in eval mode."""
    model.eval()
    metrics = task.validate(model, device)
    model.train()
    return metrics


def _start(run: Run, run_dir: Path, family: Family, task: Task, resume: bool, world: distributed.World) -> None:
    """Refuse to overwrite a trained run; on resume, check the data gives the run's vocabularies.

    Rank 0 writes the run files, after deleting what a killed run left (temporary files and folders).
    """
    if world.is_main:
        remove_leftovers(run_dir)
    if not resume:
        if checkpoint_dirs(run_dir):
            raise CheckpointError(f"{run_dir}: already holds checkpoints; pass --resume to continue it, or choose another --out")
        if world.is_main:
            write_run(run_dir, run, family.vocabs_to_json(task.vocabs, run_dir))
        return
    _, saved = read_run(run_dir, family)
    if saved != task.vocabs:
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
    state = TrainState.from_dict(saved["train_state"])
    if state.world_size != trainer.world.size:
        state.batch_in_epoch = distributed.resume_position(state.batch_in_epoch, state.world_size, trainer.world.size)
        log.info("trained on %d ranks, resumed on %d: batch %d of the epoch on each",
                 state.world_size, trainer.world.size, state.batch_in_epoch)  # fmt: skip
        state.world_size = trainer.world.size
    return state


def _score(run: Run, metrics: dict[str, float]) -> float:
    """The early-stopping metric, higher is better: the family's metric when measured, else -loss."""
    key = run.train.early_stopping
    return metrics[key] if key != "loss" and key in metrics else -metrics["loss"]


def _evaluate_and_save(run: Run, run_dir: Path, trainer: Trainer, state: TrainState) -> dict[str, float]:
    """Validate (its time counts as training wall clock), track the best, checkpoint, prune."""
    started = time.perf_counter()
    metrics = validate(trainer.model, trainer.task, trainer.device)
    state.elapsed += time.perf_counter() - started
    name = f"step_{state.step:08d}"
    score = _score(run, metrics)
    if state.best is None or score > state.best:
        state.best = score
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
    atomic_write_text(run_dir / "best.json", json.dumps({"checkpoint": state.best_checkpoint, "best": state.best}))
    prune(run_dir, run.train.keep_last, keep={state.best_checkpoint or ""})


class _StopOnSignal:
    """SIGINT/SIGTERM while training: finish the current update, checkpoint, return; a second one aborts."""

    SIGNALS = (signal.SIGINT, signal.SIGTERM)

    def __init__(self) -> None:
        self.requested: str | None = None  # set by the handler, at any moment
        self.received: str | None = None  # set between updates, at the same update on every rank
        self.previous: dict[int, object] = {}

    def __enter__(self) -> _StopOnSignal:
        if threading.current_thread() is threading.main_thread():  # handlers can only be set there
            self.previous = {s: signal.signal(s, self._handle) for s in self.SIGNALS}
        return self

    def _handle(self, signum: int, frame: object) -> None:
        if self.requested is not None:
            raise KeyboardInterrupt(f"second {signal.Signals(signum).name}")
        self.requested = signal.Signals(signum).name
        log.warning("%s: stopping after this update and writing a checkpoint (send it again to abort)", self.requested)

    def __exit__(self, *exc: object) -> None:
        for s, handler in self.previous.items():
            signal.signal(s, handler)


def done(run: Run, state: TrainState) -> bool:
    """Whether `state` has spent the run's budget (steps, epochs or minutes) or stopped early."""
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
    init: str | None = None,
) -> TrainState:
    """Train `run` into `run_dir`; `on_event(kind, state, info)` reports "step" and "valid" events.

    `init`: a run folder whose weights and vocabularies the run starts from (`train/init.py`).

    Launched by torchrun, each process trains one rank; only rank 0 reports events. Rank 0 locks
    `run_dir` before anything else (a run folder that another process holds is refused); the other
    ranks of its job wait for it at the first barrier and write nothing.

    Raises:
        MissingExtra: an optional package the run needs (`run.needs()`) is missing: said before `run_dir` is made.
    """
    extras.check(run.needs())
    limit_primitive_cache(run.train.kernel_cache)
    device = pick_device(run.train.device)
    run_dir = Path(run_dir)
    threads = torch.get_num_threads()  # `train.threads` holds for this run only: a caller's own setting comes back after it
    try:
        with distributed.process_group(device) as world:
            owner = locked(run_dir, create=not resume) if world.is_main else contextlib.nullcontext()
            with owner:
                return _train(run, run_dir, world, world.device(device), resume, data_dir, on_event, init)
    finally:
        torch.set_num_threads(threads)


def _train(run: Run, run_dir: Path, world: distributed.World, device: torch.device, resume: bool, data_dir: str | None,
           on_event: Callable[[str, TrainState, dict], None] | None, init: str | None = None) -> TrainState:  # fmt: skip
    t = run.train
    if t.threads:
        torch.set_num_threads(t.threads)
    torch.manual_seed(t.seed)
    family = run_family_of(run)
    if world.is_main:
        run_dir.mkdir(parents=True, exist_ok=True)  # an unwritable --out fails here, before the data is prepared
    run, init_vocabs, init_checkpoint = start_from(run, run_dir, family, init, resume)  # --init RUN (train/init.py)
    with world.main_first():  # rank 0 prepares the data (and tokenizers) that the others then read
        task = make_task(family, run, run_dir, data_dir, init_vocabs)
    _start(run, run_dir, family, task, resume, world)
    model = task.build_model()
    if init_checkpoint is not None:
        load_init(model, init_checkpoint, run_dir, write=world.is_main)
    model = model.to(device)
    trainer = Trainer(run, model, device, task, world)
    state = _resume(run_dir, trainer) if resume else TrainState(world_size=world.size)
    state.interrupted = None
    batcher = TokenBatcher(*task.train_lengths, max_tokens=t.max_tokens, max_sentences=t.max_sentences, shuffle=True, seed=t.seed,
                           rank=world.rank, world_size=world.size)  # fmt: skip
    model.train()
    emit = on_event if on_event is not None and world.is_main else (lambda kind, state, info: None)
    metrics_log = MetricsLog(run_dir, enabled=world.is_main)
    metrics_log.rewind(state.step)  # drop what a killed attempt logged after its last checkpoint
    last_eval = state.step

    def evaluate() -> None:
        nonlocal last_eval
        if state.step == last_eval:  # already validated and saved at this step
            return
        metrics = _evaluate_and_save(run, run_dir, trainer, state) if world.is_main else {}
        vars(state).update(world.broadcast(state.to_dict()))  # rank 0's best and early-stopping decision
        last_eval = state.step
        metrics_log.write({"kind": "valid", "step": state.step, "elapsed": state.elapsed, **metrics})
        emit("valid", state, metrics)

    def checkpoint() -> None:  # train.checkpoint_minutes: weights to average later, without validating
        if world.is_main and state.step != last_eval:
            _save(run, run_dir, trainer, state, {})

    with _StopOnSignal() as stop:
        _loop(run, state, trainer, batcher, stop, emit, metrics_log, evaluate, checkpoint)
    if stop.received:  # checkpoint without validating, to exit quickly (a cluster's grace period)
        state.interrupted = stop.received
        if state.step != last_eval and world.is_main:
            _save(run, run_dir, trainer, state, {})
    else:
        evaluate()
    metrics_log.close()
    return state


def _loop(run: Run, state: TrainState, trainer: Trainer, batcher: TokenBatcher, stop: _StopOnSignal,
          emit: Callable, metrics_log: MetricsLog, evaluate: Callable[[], None], checkpoint: Callable[[], None]) -> None:  # fmt: skip
    """Updates until the run is done or a signal asks to stop; validation every `eval_every`, and a
    checkpoint every `checkpoint_minutes` of training (the clock ranks agree on, so they agree when)."""
    t = run.train
    saved_at = state.elapsed
    while not done(run, state) and not stop.received:
        epoch = batcher.epoch(state.epoch)
        while state.batch_in_epoch < len(epoch) and not done(run, state) and not stop.received:
            started = time.perf_counter()
            group = epoch[state.batch_in_epoch : state.batch_in_epoch + t.accum]
            batches = [trainer.task.collate(index) for index in group]
            loss = trainer.update(batches, state)
            state.batch_in_epoch += len(group)
            seconds = time.perf_counter() - started
            state.update_seconds += seconds
            # Ranks agree on the clock (max_minutes) and on a signal any of them got, to stop together.
            agreed = trainer.world.max([state.elapsed + seconds, float(stop.requested is not None)], trainer.device)
            state.elapsed, stopping = agreed
            if stopping:
                stop.received = stop.requested or "a signal to another rank"
            size = sum(trainer.task.size(b) for b in batches)
            info = {"loss": loss, "lr": trainer.optimizer.param_groups[0]["lr"], trainer.task.unit: size, "seconds": seconds}
            emit("step", state, info)
            if state.step % t.log_every == 0 and loss is not None:
                metrics_log.write({"kind": "train", "step": state.step, "epoch": state.epoch, "elapsed": state.elapsed, **info})
            if (state.step % t.eval_every == 0 or state.step == t.eval_first) and not stop.received:
                evaluate()
                saved_at = state.elapsed
            elif t.checkpoint_minutes is not None and state.elapsed - saved_at >= 60 * t.checkpoint_minutes and not stop.received:
                checkpoint()
                saved_at = state.elapsed
        if state.batch_in_epoch >= len(epoch):
            state.epoch, state.batch_in_epoch = state.epoch + 1, 0
