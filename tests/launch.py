"""`attnkit` in a fresh process, or under `torchrun --standalone --nproc-per-node N` (gloo ranks on the CPU): the
harness of the torchrun tests (`faithfulness`, `heads --importance`, `attention --input`).

Every process runs with one thread (as torchrun gives each rank), so that a one-process run and the ranks compute
each item with the same kernels and their files can be compared byte for byte.
"""

from __future__ import annotations

import os
import subprocess
import sys

ENV = {**os.environ, "OMP_NUM_THREADS": "1"}


def attnkit(args: list[str], ranks: int = 0) -> subprocess.CompletedProcess:
    """`attnkit ARGS` in one fresh process (ranks 0) or on `ranks` torchrun ranks; asserts that it succeeded."""
    launch = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", str(ranks)] if ranks else [sys.executable]
    done = subprocess.run([*launch, "-m", "attnkit", *args], env=ENV, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return done
