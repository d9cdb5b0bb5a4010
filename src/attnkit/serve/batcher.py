"""Dynamic batching: requests from concurrent clients share one model call.

`workers` threads (default 1) decode a model's batches. One of them at a time collects a batch (the
collect lock): it takes the oldest waiting job, then keeps collecting jobs for up to `window_s` (or
until `max_batch` texts are waiting), then decodes it while the next free worker collects the next
batch, so with N workers up to N batches decode at once. A batch's jobs are grouped by their
settings (jobs with equal keys can share a call) and each group runs as one call. `max_batch=1`
turns batching off: every job runs alone. When a shared call raises, each of its jobs is retried
alone, so an exception fails only the request that caused it; the worker goes on. `close` stops
every worker once the jobs queued before it are answered.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections import deque
from collections.abc import Callable, Hashable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

log = logging.getLogger("attnkit")

RunBatch = Callable[[Hashable, list[str]], Sequence[Any]]  # (settings key, texts) -> one output per text


@dataclass
class Job:
    key: Hashable
    texts: list[str]
    future: Future = field(default_factory=Future)


@dataclass
class BatchStats:
    calls: int = 0
    texts: int = 0
    largest: int = 0


class DynamicBatcher:
    """Runs `run_batch(key, texts)` on `workers` threads, batching jobs across callers."""

    def __init__(self, run_batch: RunBatch, window_s: float, max_batch: int, name: str = "model", workers: int = 1) -> None:
        self.run_batch, self.window_s, self.max_batch = run_batch, window_s, max(1, max_batch)
        self.stats = BatchStats()
        self._queue: queue.Queue[Job | None] = queue.Queue()
        self._carry: deque[Job] = deque()  # a job that did not fit the previous batch goes first next time
        self._collecting = threading.Lock()  # one worker collects a batch at a time (it owns `_carry`)
        self._counting = threading.Lock()  # guards `stats`
        self._threads = [threading.Thread(target=self._work, name=f"attnkit-batcher-{name}-{i}", daemon=True) for i in range(max(1, workers))]
        for thread in self._threads:
            thread.start()

    def submit(self, key: Hashable, texts: list[str]) -> Future:
        """Queue `texts`; the future resolves to their outputs (in order) or the model's exception."""
        job = Job(key, texts)
        self._queue.put(job)
        return job.future

    def close(self) -> None:
        """Stop the workers (each takes one stop mark, after the jobs queued before it)."""
        for _ in self._threads:
            self._queue.put(None)
        for thread in self._threads:
            thread.join(timeout=10)

    def _next(self, timeout: float | None) -> Job | None:
        if self._carry:
            return self._carry.popleft()
        return self._queue.get(timeout=timeout) if timeout is None or timeout > 0 else self._queue.get_nowait()

    def _collect(self) -> list[Job] | None:
        """The next batch of jobs: the oldest, then whatever arrives within the window and fits."""
        first = self._next(None)
        if first is None:
            return None
        jobs, size = [first], len(first.texts)
        deadline = time.monotonic() + self.window_s
        while size < self.max_batch:
            try:
                job = self._next(deadline - time.monotonic())
            except queue.Empty:
                break
            if job is None:
                self._queue.put(None)  # a worker stops after this batch
                break
            if size + len(job.texts) > self.max_batch:
                self._carry.append(job)
                break
            jobs.append(job)
            size += len(job.texts)
        return jobs

    def _work(self) -> None:
        while True:
            with self._collecting:
                jobs = self._collect()
            if jobs is None:
                return
            groups: dict[Hashable, list[Job]] = {}
            for job in jobs:
                groups.setdefault(job.key, []).append(job)
            for key, group in groups.items():
                self._run(key, group)

    def _run(self, key: Hashable, jobs: list[Job]) -> None:
        texts = [t for job in jobs for t in job.texts]
        try:
            outputs = list(self.run_batch(key, texts))
        except Exception as e:  # a model error fails this call's requests, not the server
            if len(jobs) > 1:  # one request's bad input must not fail the others batched with it
                for job in jobs:
                    self._run(key, [job])
                return
            log.warning("model call failed: %s: %s", type(e).__name__, e)
            jobs[0].future.set_exception(e)
            return
        with self._counting:
            self.stats = BatchStats(self.stats.calls + 1, self.stats.texts + len(texts), max(self.stats.largest, len(texts)))
        start = 0
        for job in jobs:
            job.future.set_result(outputs[start : start + len(job.texts)])
            start += len(job.texts)
