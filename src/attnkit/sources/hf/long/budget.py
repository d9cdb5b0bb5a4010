"""The memory guard: what the long road (and the eager road) will take, before any work is done.

The estimate adds up, in bytes, what is alive at the peak, counted from what the forward pass
allocates (tests/sources/long/test_budget.py holds each term to a hand count):

- the model's weights;
- the forward pass's activations at their peak, per token in the model's dtype: in the MLP, the input
  embeddings (held by the model's forward), the layer's input, its residual and normed input (4 hidden)
  beside the gate's activation, the up projection and their product (3 intermediate); or at the
  rotary embedding, 3 hidden beside the query, its two rotated halves and their sum (4 H D) and the keys
  and values (2 Hkv D); the rotary cos and sin (2 D) in both; SDPA's own working set (its output and
  per-thread tiles) is below either; the logits of the last position only (vocabulary, float32); a
  sliding-window model's (N, N) boolean mask. The pass runs without a key/value cache;
- the kept keys, (Hkv, N, D) per kept layer, and queries, (H, N, D) per kept layer (only the chosen
  rows' queries with `rows only`), which grow while the forward pass runs and stay for the scans;
- the block workspace of a scan (`blocks.BLOCK_BYTES` each: logits, rows, the entropy's product p s and
  the copies that the local band and the tile sums take)
  and one layer's results (summaries, pooled maps, exact rows, rollout rows), which come after the
  forward pass's activations are freed: the peak is weights + kept + the larger of the two.

When the kept queries and keys do not fit the budget, they are spilled: each layer's go to a file in
a temporary folder as the forward pass hands them over (`spill`) and are read back one layer at a
time, so that memory holds one layer's instead of all. The disk estimate is what the npz holds (and
the spilled files while the run lasts). `release_freed_memory` keeps glibc from holding freed
activations (the estimate counts live bytes). `benchmarks/long_context.py` sets the estimate
beside the measured peak.

Above the budget (`--max-memory`, default half of the memory available) the run is refused
with one line that says what would fit: rows only, or nothing (the forward pass alone is too big). The eager road (every full map, `sources.hf.read`) is held to the same budget
(`check_eager`).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from attnkit.errors import AttnkitError
from attnkit.sources.hf.long.blocks import BLOCK_BYTES
from attnkit.sources.hf.long.summaries import NAMES

GiB = 2**30
WORKSPACE_ARRAYS = (
    4  # (H, b, n) float32 arrays of a block pass: logits and rows (`blocks.workspace`), the entropy's product p s, the local band's and tile sums' copies
)
EAGER_ARRAYS = 2  # (H, N, N) float32 arrays alive at once in an eager layer: the masked logits and their softmax
EAGER_SQUARES = 4  # (N, N) float32 arrays beside them: the causal mask, and rollout's head mean, product and running product
TOKEN_BYTES = 64  # a token's label in the npz (numpy fixed-width unicode)


@dataclass(frozen=True)
class Shape:
    """What the estimate needs of a model."""

    layers: int
    heads: int
    kv_heads: int
    head_dim: int
    hidden: int
    intermediate: int
    weights: int  # bytes
    dtype_bytes: int
    sliding: bool  # some layer has a sliding window (SDPA then gets an (N, N) mask)
    vocab: int = 0  # the logits of the last position


@dataclass(frozen=True)
class Plan:
    """What was asked of the long road."""

    layers: int  # how many layers are kept
    rows: int  # exact rows asked for
    row_heads: int  # heads per exact row
    rows_only: bool = False  # keep only the chosen rows' queries; no summaries, pooled maps or rollout
    pools: tuple[int, ...] = (64, 256, 1024)


def shape_of(model) -> Shape:
    """The `Shape` of a transformers decoder model."""
    c = model.config.get_text_config() if hasattr(model.config, "get_text_config") else model.config
    heads = c.num_attention_heads
    hidden = c.hidden_size
    params = list(model.parameters())
    return Shape(
        layers=c.num_hidden_layers, heads=heads, kv_heads=getattr(c, "num_key_value_heads", None) or heads,
        head_dim=getattr(c, "head_dim", None) or hidden // heads, hidden=hidden,
        intermediate=getattr(c, "intermediate_size", None) or getattr(c, "n_inner", None) or 4 * hidden,
        weights=sum(p.numel() * p.element_size() for p in params), dtype_bytes=params[0].element_size(),
        sliding=bool(getattr(c, "sliding_window", None)), vocab=getattr(c, "vocab_size", 0) or 0,
    )  # fmt: skip


def activation_bytes(shape: Shape, n: int) -> int:
    """The forward pass's activations at their peak at n tokens (see the module's docstring), weights and kept
    queries and keys aside."""
    h, d = shape.hidden, shape.head_dim
    mlp = 4 * h + 3 * shape.intermediate
    rotary = 3 * h + 4 * shape.heads * d + 2 * shape.kv_heads * d
    return n * shape.dtype_bytes * (max(mlp, rotary) + 2 * d) + 4 * shape.vocab + (n * n if shape.sliding else 0)


def forward_bytes(shape: Shape, n: int) -> int:
    """The weights and the forward pass's activations at n tokens (logits for the last position only)."""
    return shape.weights + activation_bytes(shape, n)


def _tiles(n: int, pools: tuple[int, ...]) -> int:
    return sum((-(-n // s)) ** 2 for s in pools)


@dataclass(frozen=True)
class Estimate:
    weights: int
    activations: int  # the forward pass's, at their peak
    kept: int  # kept queries and keys in memory (one layer's when spilled)
    work: int  # block workspace and one layer's results
    disk: int  # the npz
    spilled: int = 0  # kept queries and keys in temporary files while the run lasts

    @property
    def forward(self) -> int:
        return self.weights + self.activations

    @property
    def memory(self) -> int:
        """The peak: the kept queries and keys grow during the forward pass and stay for the scans, which come after it."""
        return self.weights + self.kept + max(self.activations, self.work)


def kept_bytes(shape: Shape, n: int, plan: Plan) -> int:
    """The kept queries and keys of every kept layer."""
    queries = plan.rows if plan.rows_only else n
    return plan.layers * (shape.heads * queries + shape.kv_heads * n) * shape.head_dim * shape.dtype_bytes


def estimate(shape: Shape, n: int, plan: Plan, spill: bool = False) -> Estimate:
    """Memory and disk for the long road at n tokens (`spill`: the kept queries and keys in files, one layer read back at a time)."""
    kept = kept_bytes(shape, n, plan)
    rows = plan.rows * plan.row_heads * n * 4
    scans = 0 if plan.rows_only else shape.heads * (len(NAMES) * n + 2 * _tiles(n, plan.pools)) * 4 + 2 * plan.rows * n * 4
    block = 0 if plan.rows_only else int(WORKSPACE_ARRAYS * min(BLOCK_BYTES, 4 * shape.heads * n * n))
    disk = n * TOKEN_BYTES + plan.layers * (rows + (0 if plan.rows_only else scans)) + plan.rows * n * 4
    memory_kept = kept // plan.layers if spill else kept
    return Estimate(shape.weights, activation_bytes(shape, n), memory_kept, block + rows + scans, disk, kept if spill else 0)


def eager_bytes(shape: Shape, n: int) -> int:
    """The eager road at n tokens: the forward pass, two (H, N, N) float32 arrays of one layer (the masked logits and
    their softmax, which is written and dropped), eager attention's (N, N) float mask and rollout's (N, N) products."""
    return forward_bytes(shape, n) + (EAGER_ARRAYS * shape.heads + EAGER_SQUARES) * n * n * 4


def gib(size: int) -> str:
    """A size in GiB, or in MiB below a tenth of one."""
    return f"{size / GiB:.2f} GiB" if size >= GiB // 10 else f"{size / 2**20:.1f} MiB"


M_MMAP_THRESHOLD = -3  # mallopt's parameter (malloc.h)
MMAP_THRESHOLD = 128 * 2**10  # glibc's default: larger arrays are mapped on their own and unmapped when freed
SCAN_MMAP_THRESHOLD = 32 * 2**20  # glibc's largest: the scans' blocks come from the heap, reused


def release_freed_memory(threshold: int = MMAP_THRESHOLD) -> None:
    """Hold glibc's mmap threshold at `threshold` for the rest of the process (or until the next call). Left to
    itself it rises to the largest array freed (up to 32 MiB), and the arrays below it then come from the heap,
    which keeps what the forward pass freed, so the peak resident size grows well past the bytes alive (which the
    estimate counts): the forward pass runs at glibc's default, 128 KiB, every activation mapped on its own and
    unmapped when freed. The scans then run at `SCAN_MMAP_THRESHOLD`: their blocks (`blocks.BLOCK_BYTES`) come
    from the heap, the same bytes reused block after block, instead of being mapped, zero-filled page by page and
    unmapped for every block. Other C libraries: nothing."""
    import ctypes
    import ctypes.util

    name = ctypes.util.find_library("c")
    if name is not None and hasattr(lib := ctypes.CDLL(name), "mallopt"):
        lib.mallopt(M_MMAP_THRESHOLD, threshold)


def available_memory() -> int:
    """The memory available now (MemAvailable in /proc/meminfo, else the free pages)."""
    import os

    meminfo = Path("/proc/meminfo")
    if meminfo.exists():
        for line in meminfo.read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")


def _fits(shape: Shape, n: int, plan: Plan, budget: int) -> str:
    """What would fit in `budget` (the kept queries and keys spilled, one layer's in memory, so fewer layers do not
    help): rows only, or nothing."""
    rows = replace(plan, rows_only=True, rows=max(plan.rows, 1))
    if not plan.rows_only and _least(shape, n, rows).memory <= budget:
        return f"--long rows ({gib(_least(shape, n, rows).memory)})"
    return f"nothing: the forward pass alone needs {gib(forward_bytes(shape, n))}"


def _least(shape: Shape, n: int, plan: Plan) -> Estimate:
    """The estimate with the kept queries and keys spilled (the least memory the plan can take)."""
    return estimate(shape, n, plan, spill=True)


def check(name: str, shape: Shape, n: int, plan: Plan, budget: int) -> Estimate:
    """The estimate (spilled when the kept queries and keys do not fit in memory), or one line if even that is over
    `budget` bytes."""
    est = estimate(shape, n, plan)
    if est.memory > budget:
        est = _least(shape, n, plan)
    if est.memory > budget:
        raise AttnkitError(
            f"{name}: {n} tokens need about {gib(est.memory)} (forward pass {gib(est.forward)}, one layer's kept queries and keys {gib(est.kept)} "
            f"with the rest spilled to disk, blocks {gib(est.work)}), over the budget of {gib(budget)} (--max-memory); what fits: {_fits(shape, n, plan, budget)}"
        )
    return est


def check_eager(name: str, shape: Shape, n: int, budget: int | None) -> None:
    """One line if the eager road's full maps of n tokens are over `budget` bytes (None: half of what is available)."""
    need = eager_bytes(shape, n)
    budget = budget or available_memory() // 2
    if need > budget:
        disk = shape.layers * shape.heads * n * n * 4
        raise AttnkitError(
            f"{name}: the full maps of {n} tokens need about {gib(need)} of memory and {gib(disk)} on disk, over the budget of {gib(budget)} "
            "(--max-memory); --long takes the input without them (decoder and encoder models)"
        )


def parse_size(text: str, option: str = "--max-memory") -> int:
    """'24G', '512M', '1.5GiB' or a byte count -> bytes (`option`: what gave it, in the one-line error)."""
    units = {"": 1, "K": 2**10, "M": 2**20, "G": GiB, "T": 2**40}
    t = text.strip().upper().removesuffix("IB").removesuffix("B")
    unit = t[-1] if t and t[-1] in units else ""
    try:
        value = float(t[: len(t) - len(unit)])
    except ValueError:
        raise AttnkitError(f"{option} {text}: give a size such as 8G, 512M or a byte count") from None
    if value <= 0:
        raise AttnkitError(f"{option} {text}: must be positive")
    return int(value * units[unit])
