"""The memory guard: what the long road (and the eager road) will take, before any work is done.

The estimate adds up, in bytes: the model's weights; the forward pass's activations (a few
hidden-size and one intermediate-size array per token, in the model's dtype, and a sliding-window
model's (N, N) boolean mask); the kept keys, (Hkv, N, D) per kept layer, and queries, (H, N, D) per
kept layer (only the chosen rows' queries with `rows only`); the block workspace (two (H, b, n)
float32 buffers, `blocks.BLOCK_BYTES` each, and the entropy's product p s); and one layer's results (the per-query summaries, the
pooled maps with and without the sink, exact rows, rollout rows). The disk estimate is what the npz
holds. `benchmarks/long_context.py` sets the estimate beside the measured peak.

Above the budget (`--max-memory`, default half of the memory available now) the run is refused
with one line that says what would fit: fewer layers, or rows only, or nothing (the forward pass
alone is too big). The eager road (every full map, `sources.hf.read`) is held to the same budget
(`check_eager`).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from attnkit.errors import AttnkitError
from attnkit.sources.hf.long.blocks import BLOCK_BYTES
from attnkit.sources.hf.long.summaries import NAMES

GiB = 2**30
WORKSPACE_ARRAYS = 3  # (H, b, n) float32 arrays of a block pass: logits and rows (`blocks.workspace`), the entropy product
EAGER_ARRAYS = 4  # (H, N, N) float32 arrays alive at once in an eager layer
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
        sliding=bool(getattr(c, "sliding_window", None)),
    )  # fmt: skip


def forward_bytes(shape: Shape, n: int) -> int:
    """The weights and the forward pass's activations at n tokens (logits for the last position only)."""
    activations = n * shape.dtype_bytes * (16 * shape.hidden + 6 * shape.intermediate + 4 * (shape.heads + 2 * shape.kv_heads) * shape.head_dim)
    return shape.weights + activations + (n * n if shape.sliding else 0)


def _tiles(n: int, pools: tuple[int, ...]) -> int:
    return sum((-(-n // s)) ** 2 for s in pools)


@dataclass(frozen=True)
class Estimate:
    forward: int  # weights and activations
    kept: int  # kept queries and keys
    work: int  # block workspace and one layer's results
    disk: int  # the npz

    @property
    def memory(self) -> int:
        return self.forward + self.kept + self.work


def estimate(shape: Shape, n: int, plan: Plan) -> Estimate:
    """Memory and disk for the long road at n tokens."""
    queries = plan.rows if plan.rows_only else n
    kept = plan.layers * (shape.heads * queries + shape.kv_heads * n) * shape.head_dim * shape.dtype_bytes
    rows = plan.rows * plan.row_heads * n * 4
    scans = 0 if plan.rows_only else shape.heads * (len(NAMES) * n + 2 * _tiles(n, plan.pools)) * 4 + 2 * plan.rows * n * 4
    block = 0 if plan.rows_only else int(WORKSPACE_ARRAYS * min(BLOCK_BYTES, 4 * shape.heads * n * n))
    disk = n * TOKEN_BYTES + plan.layers * (rows + (0 if plan.rows_only else scans)) + plan.rows * n * 4
    return Estimate(forward_bytes(shape, n), kept, block + rows + scans, disk)


def eager_bytes(shape: Shape, n: int) -> int:
    """The eager road at n tokens: the forward pass, eager attention's (N, N) float mask and a few (H, N, N)
    float32 arrays of one layer (scores, weights, the copy written), and rollout's few (N, N) products."""
    return forward_bytes(shape, n) + (EAGER_ARRAYS * shape.heads + 4) * n * n * 4


def gib(size: int) -> str:
    """A size in GiB, or in MiB below a tenth of one."""
    return f"{size / GiB:.2f} GiB" if size >= GiB // 10 else f"{size / 2**20:.1f} MiB"


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
    """What would fit in `budget`: fewer layers, rows only, or nothing."""
    fewer = next((k for k in range(plan.layers - 1, 0, -1) if estimate(shape, n, replace(plan, layers=k)).memory <= budget), None)
    if fewer is not None:
        return f"--layers naming at most {fewer} of the {plan.layers} layers ({gib(estimate(shape, n, replace(plan, layers=fewer)).memory)})"
    rows = replace(plan, rows_only=True, rows=max(plan.rows, 1))
    if not plan.rows_only and estimate(shape, n, rows).memory <= budget:
        return f"--long rows ({gib(estimate(shape, n, rows).memory)})"
    return f"nothing: the forward pass alone needs {gib(forward_bytes(shape, n))}"


def check(name: str, shape: Shape, n: int, plan: Plan, budget: int) -> Estimate:
    """The estimate, or one line if it is over `budget` bytes."""
    est = estimate(shape, n, plan)
    if est.memory > budget:
        raise AttnkitError(
            f"{name}: {n} tokens need about {gib(est.memory)} (forward pass {gib(est.forward)}, kept queries and keys {gib(est.kept)}, "
            f"blocks {gib(est.work)}), over the budget of {gib(budget)} (--max-memory); what fits: {_fits(shape, n, plan, budget)}"
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
