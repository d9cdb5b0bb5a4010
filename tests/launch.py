"""`attnkit` in this process on one thread, or under `torchrun --standalone --nproc-per-node N` (gloo ranks on the
CPU): the harness of the torchrun tests (`faithfulness`, `heads --importance`, `attention --input`).

Every run computes on one thread (as torchrun gives each rank), so that a one-process run and the ranks compute each
item with the same kernels and their files can be compared byte for byte. The one-process run is the CLI called in
this process: a fresh interpreter would only add the imports' seconds (torch and attnkit) to each test.
"""

from __future__ import annotations

import contextlib
import io
import os
import subprocess
import sys

import torch

from attnkit.cli import main

ENV = {**os.environ, "OMP_NUM_THREADS": "1"}


def attnkit(args: list[str], ranks: int = 0) -> str:
    """`attnkit ARGS` in this process on one thread (ranks 0) or on `ranks` torchrun ranks; asserts that it succeeded
    and returns what it printed on stdout."""
    if ranks:
        launch = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", str(ranks)]
        done = subprocess.run([*launch, "-m", "attnkit", *args], env=ENV, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr[-3000:]
        return done.stdout
    threads, out = torch.get_num_threads(), io.StringIO()
    torch.set_num_threads(1)
    try:
        with contextlib.redirect_stdout(out):
            assert main(args) == 0
    finally:
        torch.set_num_threads(threads)
    return out.getvalue()
