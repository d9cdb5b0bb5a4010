"""How OpenMP's idle threads wait: the `attnkit` command chooses it before torch is imported.

PyTorch's CPU wheels run their thread pool on GNU OpenMP (libgomp), which reads `OMP_WAIT_POLICY`
and `GOMP_SPINCOUNT` once, when `import torch` loads it. By default a thread that has finished its
share of a parallel region spins up to 300,000 times before it sleeps, so that the next region
starts without a wake-up. On an idle machine that saves the wake-up; on a busy one the spinning
thread takes a core that the thread it waits for needs. Issue #59's report (2-core AMD EPYC):
toy-reverse trained in 51 s alone, 145 s beside one single-threaded job and 351 s beside a
two-threaded one, far more than the lost core explains. With `OMP_WAIT_POLICY=PASSIVE` a waiting
thread sleeps at once. `benchmarks/busy_machine.py` measures both policies, idle and beside a
busy-loop process (its JSON lines go to benchmarks/results/busy_machine.jsonl).

The `attnkit` command (its console script and `python -m attnkit`, `attnkit.__main__`) sets
`OMP_WAIT_POLICY=PASSIVE` unless the user set `OMP_WAIT_POLICY` or `GOMP_SPINCOUNT`; `attnkit
doctor` says which. A program that imports attnkit as a library keeps whatever its process has.
"""

from __future__ import annotations

import os
from collections.abc import MutableMapping

POLICY = "PASSIVE"
USER_SETTINGS = ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")  # either one is the user's choice of how threads wait
MARKER = "ATTNKIT_OMP_WAIT_POLICY"  # set beside OMP_WAIT_POLICY when attnkit chose it (child processes inherit both)


def choose_wait_policy(environ: MutableMapping[str, str] = os.environ) -> None:
    """Set `OMP_WAIT_POLICY=PASSIVE` in `environ` unless the user chose how OpenMP's threads wait.
    It takes effect only when called before torch is imported."""
    if not any(name in environ for name in USER_SETTINGS):
        environ["OMP_WAIT_POLICY"] = environ[MARKER] = POLICY


def wait_policy(environ: MutableMapping[str, str] = os.environ) -> str:
    """How this process's OpenMP threads wait, and who chose it, in words (`attnkit doctor`)."""
    if MARKER in environ and environ.get("OMP_WAIT_POLICY") == environ[MARKER]:
        return f"OMP_WAIT_POLICY={environ[MARKER]}, chosen by attnkit: idle threads sleep, so a busy core does not stall training"
    settings = [f"{name}={environ[name]}" for name in USER_SETTINGS if name in environ]
    if settings:
        return f"{', '.join(settings)}, as set in the environment"
    return "libgomp's default (idle threads spin before they sleep): attnkit chooses PASSIVE only when started as the attnkit command"
