"""The settings of the long road (`attnkit attention --long`) and the positions they name."""

from __future__ import annotations

from dataclasses import dataclass

from attnkit.errors import AttnkitError

MODES = ("all", "rows")  # all: summaries, pooled maps, rollout rows and exact rows; rows: exact rows only
POOLS = (64, 256, 1024)  # the zoom levels of the pooled maps, in tokens per tile side


@dataclass(frozen=True)
class LongOptions:
    mode: str = "all"
    rows: tuple[str, ...] = ()  # query positions as given: "q" (negative: from the end) or "a:b"; (): a decoder's last token, an encoder's first
    layers: tuple[int, ...] | None = None  # 1-based layers to keep (None: all)
    heads: tuple[int, ...] | None = None  # heads of the exact rows (None: all)
    window: int = 64  # the local window of the `local` summary, in tokens
    max_memory: int | None = None  # bytes (None: half of the memory available)
    truncate: bool = False
    new_tokens: int | None = None  # greedy generation after the input: the rows of each new token

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise AttnkitError(f"--long {self.mode}: give one of {', '.join(MODES)}")


def refuse_run(source: str) -> None:
    """Refuse `--long` on an attnkit run folder in one line (`attention --long` and `report --long` alike)."""
    from attnkit.sources import is_run

    if is_run(source):
        raise AttnkitError(f"{source}: --long reads Hugging Face decoder and encoder models; attnkit runs take the full maps (leave out --long)")


def _position(text: str, n: int) -> int:
    try:
        q = int(text)
    except ValueError:
        raise AttnkitError(f"--rows {text}: give a query position (negative counts from the end) or a range a:b") from None
    if not -n <= q < n:
        raise AttnkitError(f"--rows {text}: the input has {n} tokens (positions 0 to {n - 1}, or -1 to -{n})")
    return q % n


DEFAULT_ROW = {"decoder": "-1", "encoder": "0"}  # the row read when none is named: the next token's; [CLS], what a classifier reads


def resolve_rows(specs: tuple[str, ...], n: int, default: str) -> list[int]:
    """The query positions that `specs` name, in order, each once (none named: the position `default` names)."""
    out: list[int] = []
    for spec in specs or (default,):
        if ":" in spec:
            a, b = spec.split(":", 1)
            start, stop = _position(a or "0", n), (_position(b, n) if b else n)
            if stop <= start:
                raise AttnkitError(f"--rows {spec}: an empty range")
            out.extend(range(start, stop))
        else:
            out.append(_position(spec, n))
    return sorted(set(out))


def check_choice(what: str, chosen: tuple[int, ...] | None, count: int, first: int) -> None:
    """One line if a chosen layer or head number is not one the model has (`first`: 1 for layers, 0 for heads)."""
    for c in chosen or ():
        if not first <= c < count + first:
            raise AttnkitError(f"--{what} {c}: the model has {what} {first} to {count + first - 1}")
