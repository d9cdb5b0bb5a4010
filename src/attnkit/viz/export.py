"""The attention JSONL format: one JSON object per sentence, read by plots, reports and the web UI.

Each line: `{"id": i, "src": [source pieces], "tgt": [target pieces], "attention": [[w_ts ...] ...],
"score": s}` where `attention[t][s]` is the weight target piece `t` gave source piece `s`
(rows sum to 1). Writers write atomically.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from pathlib import Path

from attnkit.errors import DataError
from attnkit.io import atomic_path


def attention_record(index: int, src: list[str], tgt: list[str], attention, score: float | None = None) -> dict:
    """A JSON-ready record; `attention` is a (T, S) tensor or nested list."""
    rows = attention.tolist() if hasattr(attention, "tolist") else attention
    return {"id": index, "src": src, "tgt": tgt, "attention": [[round(w, 5) for w in row] for row in rows], "score": score}


def write_attention_jsonl(path: str | Path, records: Iterable[dict]) -> None:
    with atomic_path(path) as tmp, open(tmp, "w", encoding="utf-8") as f:
        for record in records:
            f.write(json.dumps(record, ensure_ascii=False) + "\n")


def read_attention_jsonl(path: str | Path) -> Iterator[dict]:
    path = Path(path)
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as e:
        raise DataError(f"{path}: cannot read attention file ({e})") from None
    for number, line in enumerate(lines, 1):
        try:
            record = json.loads(line)
        except json.JSONDecodeError as e:
            raise DataError(f"{path}, line {number}: not JSON ({e.msg})") from None
        yield record
