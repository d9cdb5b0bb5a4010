"""Memory of training and decoding: jemalloc when it is installed (Linux), and a small oneDNN primitive cache.

PyTorch takes CPU tensor memory from malloc. Token batches give every update tensors of new
shapes, and glibc's malloc fragments under that pattern: measured with
`benchmarks/train_tps.py --precision bf16 --threads 1 --updates 40` (m30k-small), peak RSS was
2.04 GB with glibc and 1.44 GB with jemalloc, at the same speed (2,281-2,326 against 2,444-2,600
target tokens/s). jemalloc keeps freed pages for reuse (`dirty_decay_ms:-1`): returning them to the
system costs page faults at every update (2,057 tokens/s with its default decay).

Decoding allocates a new (rows, vocabulary) block of scores at every step; glibc returns blocks that
large to the system and takes them back with page faults each time. With jemalloc,
`benchmarks/decode_speed.py --dtype bf16 --workers 1` (m30k-small, test_2016, beam 5) ran 137.4
against 109.8 sentences/s.

A running process cannot change its malloc, so `attnkit train`, `translate`, `evaluate` and
`serve` started from the command line re-execute themselves once with the library preloaded
(`LD_PRELOAD`; same process id, same arguments), before torch is imported (`attnkit.__main__`),
so the replaced process has loaded little. `ATTNKIT_ALLOCATOR=system` turns this off; an `LD_PRELOAD` that already names jemalloc
is left alone. Install it with `apt install libjemalloc2` (Debian/Ubuntu) or your system's package.
"""

from __future__ import annotations

import ctypes.util
import logging
import os
import sys

log = logging.getLogger("attnkit")
MALLOC_CONF = "dirty_decay_ms:-1,muzzy_decay_ms:-1"
MARKER = "ATTNKIT_JEMALLOC"  # set in the re-executed process
JEMALLOC_COMMANDS = {"train", "demo", "sweep", "translate", "evaluate", "serve"}  # the attnkit commands re-executed on jemalloc


def jemalloc_env(environ: dict[str, str]) -> dict[str, str] | None:
    """The environment to re-execute with, or None to keep the current allocator."""
    if not sys.platform.startswith("linux") or environ.get("ATTNKIT_ALLOCATOR", "jemalloc") != "jemalloc":
        return None
    preload = environ.get("LD_PRELOAD", "")
    if "jemalloc" in preload:
        return None
    library = ctypes.util.find_library("jemalloc")
    if library is None:
        return None
    return {
        **environ,
        "LD_PRELOAD": f"{preload} {library}".strip(),
        "MALLOC_CONF": environ.get("MALLOC_CONF", MALLOC_CONF),
        MARKER: library,
    }


def use_jemalloc(command: list[str]) -> None:
    """Re-execute `python COMMAND...` with jemalloc preloaded, if `jemalloc_env` says so.

    `command` is what follows the interpreter: `["-m", "attnkit", *sys.argv[1:]]` for the CLI,
    `sys.argv` for a script such as `benchmarks/train_tps.py`.
    """
    if os.environ.get(MARKER):
        log.debug("memory allocator: %s (set ATTNKIT_ALLOCATOR=system to use the system's)", os.environ[MARKER])
        return
    env = jemalloc_env(dict(os.environ))
    if env is not None:
        sys.stdout.flush()
        sys.stderr.flush()
        os.execve(sys.executable, [sys.executable, *command], env)


def use_jemalloc_for(words: list[str]) -> None:
    """`attnkit WORDS...`: re-executed on jemalloc when its command is one of `JEMALLOC_COMMANDS`.
    `attnkit.__main__` calls it before torch is imported, so that the process it replaces has loaded little."""
    if next((w for w in words if not w.startswith("-")), None) in JEMALLOC_COMMANDS:
        use_jemalloc(["-m", "attnkit", *words])


def limit_primitive_cache(capacity: int = 64) -> None:
    """Cap the two caches of compiled bf16 matmul kernels on the CPU (oneDNN's, and PyTorch's ideep
    layer above it) at `capacity` entries each, unless set already.

    oneDNN compiles a kernel for every new matmul shape (0.4 to 18 ms; `ONEDNN_VERBOSE=profile_create`
    shows them) and keeps the last `ONEDNN_PRIMITIVE_CACHE_CAPACITY` (default 1,024), each with its
    buffers (about 0.4 MB for a (B, 512) x (512, 1024) one, 2 MB for a (C, 8000) x (8000, 256) one).
    ideep, through which PyTorch calls oneDNN, keeps its own objects for the last `LRU_CACHE_CAPACITY`
    shapes (default 1,024), and these hold the kernels alive whatever oneDNN's cap. Token batches
    bring new shapes at every update: live memory grew by 290 MB over the first epoch of
    `m30k-small` with only oneDNN's cache capped, and `benchmarks/train_tps.py --precision bf16
    --skip 130 --updates 190` (2 threads, jemalloc) peaked at 1.38 GB against 1.00 GB with both
    capped at 64, at the same speed (7,616 and 7,619 target tokens/s; docs/training.md, Memory). A
    decoder that steps through time has more shapes per update (one per batch size and weight), and
    the RNN presets set `train.kernel_cache: 256`. Both libraries read their variable when they
    first build a kernel, so this must run before the first bf16 matmul of the process, and the
    first value set wins (an environment variable of the user's included).
    """
    os.environ.setdefault("ONEDNN_PRIMITIVE_CACHE_CAPACITY", str(capacity))
    os.environ.setdefault("LRU_CACHE_CAPACITY", str(capacity))
