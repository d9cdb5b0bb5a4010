"""The documents a server keeps in memory, evicted by size: a least-recently-used cache with a byte budget.

`attnkit serve --long-cache SIZE` holds each read document (`document.LongDocument`: its queries
and keys, pooled maps and grids, `nbytes`) under an id derived from the model, the settings and
the text (`document_id`), so the same document posted twice is read once. Reading or asking a
tile of a document makes it the most recent; a new document evicts the least recent ones until
everything fits in the budget, and a document larger than the whole budget is refused in one
line. The ids of evicted documents are remembered (the latest `REMEMBERED`), so that a tile asked
of one answers "evicted" rather than "unknown".
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict

from attnkit.errors import AttnkitError
from attnkit.sources.hf.long.budget import gib
from attnkit.sources.hf.long.document import LongDocument


class TooLarge(AttnkitError):
    """A document larger than the whole cache."""


REMEMBERED = 4096  # evicted ids kept to tell "evicted" from "unknown"


def document_id(model: str, window: int, text: str) -> str:
    """A document's id: 16 hex digits of the SHA-256 of its model, window and text."""
    return hashlib.sha256(f"{model}\0{window}\0{text}".encode()).hexdigest()[:16]


class DocumentCache:
    """Documents by id, the least recently used evicted first, all together within `max_bytes`."""

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self._docs: OrderedDict[str, LongDocument] = OrderedDict()
        self._evicted: OrderedDict[str, None] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: str) -> LongDocument | None:
        """The document `key` (now the most recent), or None."""
        with self._lock:
            doc = self._docs.get(key)
            if doc is not None:
                self._docs.move_to_end(key)
            return doc

    def check(self, need: int, what: str) -> None:
        """One line if `need` bytes could never fit."""
        if need > self.max_bytes:
            raise TooLarge(f"{what}: its queries, keys and pooled maps need about {gib(need)}, over the whole --long-cache of {gib(self.max_bytes)}")

    def put(self, key: str, doc: LongDocument) -> list[str]:
        """Keep `doc` as `key` (the most recent), evicting the least recent until all fit; returns the evicted ids."""
        self.check(doc.nbytes, f"document {key} ({len(doc.tokens):,} tokens)")
        evicted = []
        with self._lock:
            self._docs.pop(key, None)
            while self._docs and self.used() + doc.nbytes > self.max_bytes:
                old, _ = self._docs.popitem(last=False)
                evicted.append(old)
                self._evicted[old] = None
            self._docs[key] = doc
            self._evicted.pop(key, None)
            while len(self._evicted) > REMEMBERED:
                self._evicted.popitem(last=False)
        return evicted

    def was_evicted(self, key: str) -> bool:
        return key in self._evicted

    def used(self) -> int:
        """Bytes the kept documents hold."""
        return sum(d.nbytes for d in self._docs.values())

    def documents(self) -> list[tuple[str, LongDocument]]:
        """(id, document), least recent first."""
        with self._lock:
            return list(self._docs.items())
