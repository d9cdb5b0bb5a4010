"""Trees as symbol sequences, after Vinyals et al. (2015), "Grammar as a Foreign Language", sec. 2.

The source is the sentence's words. The target is the tree in depth-first order: an open symbol
``(L`` and a close symbol ``)L`` around each constituent labelled L, and one leaf symbol per word,
e.g. for "John has a dog ." (POS tags normalised to XX, as the paper does):

    (S (NP XX )NP (VP XX (NP XX XX )NP )VP XX )S

Two leaf options: ``keep_words=False`` writes every preterminal (punctuation included) as the
placeholder ``XX``; ``keep_words=True`` writes the word itself. The target vocabulary is therefore
exactly: ``(L`` and ``)L`` for each constituent label L of the training trees (after
`trees.preprocess`), the leaf symbols (``XX``, or the training words), and `EOS` (``</s>``, the
end symbol of `attnkit.data.vocab`). The preterminals' labels are not in the target; a tree built
back from a sequence takes its POS tags from the caller (or uses ``XX``).

`delinearise` builds the tree of a valid sequence over given words and rejects anything else;
`repair` builds a well-formed tree over exactly the given words from any sequence, saying whether
it had to repair. `LinearState` is the constraint of a constrained beam search: updated symbol by
symbol, it says which symbols may come next so that every finished sequence is valid.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

from attnkit.errors import DataError
from attnkit.families.parsing.trees import Tree

PLACEHOLDER = "XX"
EOS = "</s>"


def is_open(symbol: str) -> bool:
    """True for an open-bracket symbol ``(L``."""
    return len(symbol) > 1 and symbol[0] == "("


def is_close(symbol: str) -> bool:
    """True for a close-bracket symbol ``)L``."""
    return len(symbol) > 1 and symbol[0] == ")"


def linearise(tree: Tree, *, keep_words: bool = False) -> tuple[list[str], list[str]]:
    """The (source, target) pair of one tree (target without EOS).

    Args:
        tree: A preprocessed tree (`trees.preprocess`).
        keep_words: Leaves are the words themselves rather than ``XX``.

    Returns:
        ``(words, symbols)``.

    Raises:
        DataError: A word starts with ``(`` or ``)`` and so would read as a bracket.
    """
    symbols: list[str] = []
    stack: list[Tree | str] = [tree]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            symbols.append(item)  # a close symbol pushed below
        elif item.is_preterminal:
            word = item.children[0]
            if keep_words and (is_open(word) or is_close(word)):  # type: ignore[arg-type]
                raise DataError(f"word {word!r} would read as a bracket symbol")
            symbols.append(word if keep_words else PLACEHOLDER)  # type: ignore[arg-type]
        else:
            symbols.append("(" + item.label)
            stack.append(")" + item.label)
            stack.extend(reversed(item.children))
    return tree.words(), symbols


def target_vocabulary(trees: Iterable[Tree], *, keep_words: bool = False) -> list[str]:
    """The sorted target symbols of `trees` (``(L``, ``)L``, the leaf symbols), EOS last."""
    symbols = {symbol for tree in trees for symbol in linearise(tree, keep_words=keep_words)[1]}
    return sorted(symbols) + [EOS]


@dataclass(frozen=True)
class LinearState:
    """Where a target prefix stands, and which symbols may follow it.

    A valid sequence is one bracketed root constituent covering all the words in order, each
    constituent non-empty, each close symbol naming the constituent it closes, then `EOS`. The
    rules, for `allows`:

    - ``(L``: the root not yet closed, a word still uncovered (every constituent needs one), the
      depth below `max_depth`, and room under `max_len` to finish afterwards;
    - a leaf: a constituent open and a word uncovered (with `words`, only that next word);
    - ``)L``: L is the innermost open constituent, which is non-empty; the root only once all
      words are covered;
    - `EOS`: only after the root closed (so every word is covered and every bracket closed).

    Build with `LinearState.start`; `step` returns the next state (the state is immutable, so beams
    can share prefixes).
    """

    n_words: int
    words: tuple[str, ...] | None = None  # the leaf symbols must be these words (keep_words)
    max_len: int | None = None  # most symbols in the whole sequence, EOS included
    max_depth: int | None = None
    covered: int = 0
    length: int = 0
    stack: tuple[str, ...] = ()  # labels of the open constituents, outermost first
    filled: tuple[bool, ...] = ()  # whether each open constituent has a word yet
    done: bool = False  # the root has closed
    finished: bool = False  # EOS was read

    @classmethod
    def start(
        cls,
        words: Sequence[str],
        *,
        keep_words: bool = False,
        max_len: int | None = None,
        max_depth: int | None = None,
    ) -> LinearState:
        """The state before the first symbol for the input `words`.

        Args:
            words: The input sentence.
            keep_words: Leaf symbols are the words (else ``XX``).
            max_len: Most symbols in the whole sequence, EOS included (None: no limit).
            max_depth: Most constituents open at once (None: no limit).

        Raises:
            DataError: No words, `max_len` below ``len(words) + 3`` (the shortest tree and EOS),
                or `max_depth` below 1.
        """
        if not words:
            raise DataError("a parse needs at least one input word")
        if max_len is not None and max_len < len(words) + 3:
            raise DataError(f"max_len {max_len} is too short for {len(words)} words (needs {len(words) + 3})")
        if max_depth is not None and max_depth < 1:
            raise DataError(f"max_depth {max_depth} leaves no room for a root")
        return cls(len(words), tuple(words) if keep_words else None, max_len, max_depth)

    def next_leaf(self) -> str | None:
        """The one leaf symbol allowed next, or None."""
        if not self.stack or self.covered >= self.n_words:
            return None
        return self.words[self.covered] if self.words is not None else PLACEHOLDER

    def allows(self, symbol: str) -> bool:
        """Whether `symbol` may come next."""
        if self.finished:
            return False
        if symbol == EOS:
            return self.done
        if is_open(symbol):
            return self._may_open()
        if is_close(symbol):
            return self._may_close() and symbol[1:] == self.stack[-1]
        return symbol == self.next_leaf()

    def allowed(self, vocabulary: Iterable[str]) -> list[str]:
        """The symbols of `vocabulary` that may come next (with `words`, a leaf only if the next
        word is in `vocabulary`)."""
        opens, close, leaf = self._may_open(), self.closer(), self.next_leaf()
        return [s for s in vocabulary if (s == EOS and self.done and not self.finished) or s == close or s == leaf or (opens and is_open(s))]

    def closer(self) -> str | None:
        """The one close symbol allowed next, or None."""
        return ")" + self.stack[-1] if self._may_close() else None

    def _may_open(self) -> bool:
        depth = len(self.stack) + 1
        if self.done or self.finished or self.covered >= self.n_words:
            return False
        if self.max_depth is not None and depth > self.max_depth:
            return False
        # after it: length + 1 symbols, then the uncovered leaves, `depth` closes and EOS
        return self.max_len is None or self.length + 1 + (self.n_words - self.covered) + depth + 1 <= self.max_len

    def _may_close(self) -> bool:
        if not self.stack or not self.filled[-1] or self.finished:
            return False
        return len(self.stack) > 1 or self.covered == self.n_words

    def step(self, symbol: str) -> LinearState:
        """The state after `symbol`.

        Raises:
            DataError: `symbol` is not allowed here (see `allows`).
        """
        if not self.allows(symbol):
            raise DataError(f"symbol {self.length + 1} ({symbol!r}) is not allowed here")
        n = self.length + 1
        if symbol == EOS:
            return replace(self, length=n, finished=True)
        if is_open(symbol):
            return replace(self, length=n, stack=(*self.stack, symbol[1:]), filled=(*self.filled, False))
        if is_close(symbol):  # the parent now holds a non-empty constituent
            filled = self.filled[:-2] + (True,) if len(self.filled) > 1 else ()
            return replace(self, length=n, stack=self.stack[:-1], filled=filled, done=not filled)
        filled = self.filled[:-1] + (True,)
        return replace(self, length=n, covered=self.covered + 1, filled=filled)


def delinearise(symbols: Sequence[str], words: Sequence[str], tags: Sequence[str] | None = None, *, keep_words: bool = False) -> Tree:
    """The tree of a valid target sequence over `words` (a final `EOS` is optional).

    Args:
        symbols: The target sequence.
        words: The input words; the leaves of the tree, in order.
        tags: The POS tags for the preterminals (default ``XX``).
        keep_words: The leaf symbols are the words (else ``XX``).

    Raises:
        DataError: The sequence is not valid (naming the first offending symbol), or it ends early.
    """
    tags = _tags(words, tags)
    state = LinearState.start(words, keep_words=keep_words)
    stack: list[list[Tree]] = []
    labels: list[str] = []
    root: Tree | None = None
    for symbol in symbols:
        state = state.step(symbol)
        if is_open(symbol):
            stack.append([])
            labels.append(symbol[1:])
        elif is_close(symbol):
            node = Tree(labels.pop(), tuple(stack.pop()))
            if stack:
                stack[-1].append(node)
            else:
                root = node
        elif symbol != EOS:
            i = state.covered - 1
            stack[-1].append(Tree(tags[i], (words[i],)))
    if root is None:
        raise DataError(f"the sequence ends before its tree is complete ({state.covered} of {len(words)} words)")
    return root


def _tags(words: Sequence[str], tags: Sequence[str] | None) -> Sequence[str]:
    if not words:
        raise DataError("a parse needs at least one input word")
    if tags is None:
        return [PLACEHOLDER] * len(words)
    if len(tags) != len(words):
        raise DataError(f"{len(tags)} tags for {len(words)} words")
    return tags


def repair(
    symbols: Sequence[str],
    words: Sequence[str],
    tags: Sequence[str] | None = None,
    *,
    keep_words: bool = False,
    root_label: str = "S",
) -> tuple[Tree, bool]:
    """A well-formed tree over exactly `words` from any symbol sequence.

    Reads the symbols left to right and repairs as it goes: a leaf symbol takes the next word
    (extra leaves, once the words are used up, are dropped; a leaf that is not ``XX``, or not the
    word with `keep_words`, still takes the word); a close symbol closes the innermost open
    constituent whatever label it names (one with nothing open is dropped, and a constituent
    closed with no words is dropped); anything after the root closed goes back inside the root;
    symbols after `EOS` are ignored. Words left at the end go into the innermost open constituent
    (or the root) and every open bracket is closed. A sequence that does not open a root first
    gets a `root_label` root.

    Returns:
        ``(tree, repaired)``: `repaired` is False exactly when `delinearise` accepts the sequence
        (and then the trees are equal).
    """
    tags = _tags(words, tags)
    builder = _Builder(words, tags, root_label)
    for i, symbol in enumerate(symbols):
        if symbol == EOS:
            builder.repaired |= i + 1 < len(symbols)
            break
        if is_open(symbol):
            builder.open(symbol[1:])
        elif is_close(symbol):
            builder.close(symbol[1:])
        else:
            expected = words[builder.used] if keep_words and builder.used < len(words) else PLACEHOLDER
            builder.repaired |= symbol != expected
            builder.leaf()
    return builder.finish()


class _Builder:
    """The mutable state of `repair`: open constituents, words used, whether it repaired."""

    def __init__(self, words: Sequence[str], tags: Sequence[str], root_label: str) -> None:
        self.words, self.tags, self.root_label = words, tags, root_label
        self.stack: list[tuple[str, list[Tree]]] = []
        self.root: Tree | None = None
        self.used = 0
        self.repaired = False

    def _ensure_open(self) -> None:
        """Reopen the closed root, or open an implicit one, so that something is open."""
        if self.stack:
            return
        self.repaired = True
        if self.root is None:
            self.stack.append((self.root_label, []))
        else:
            self.stack.append((self.root.label, list(self.root.children)))  # type: ignore[arg-type]
            self.root = None

    def open(self, label: str) -> None:
        if not self.stack and self.root is not None:
            self._ensure_open()
        self.stack.append((label, []))

    def leaf(self) -> None:
        if self.used == len(self.words):
            self.repaired = True
            return
        self._ensure_open()
        self.stack[-1][1].append(Tree(self.tags[self.used], (self.words[self.used],)))
        self.used += 1

    def close(self, label: str) -> None:
        if not self.stack:
            self.repaired = True
            return
        own, children = self.stack.pop()
        self.repaired |= own != label or not children or (not self.stack and self.used < len(self.words))
        if not children:
            return
        node = Tree(own, tuple(children))
        if self.stack:
            self.stack[-1][1].append(node)
        else:
            self.root = node

    def finish(self) -> tuple[Tree, bool]:
        if self.used < len(self.words):
            self._ensure_open()
            while self.used < len(self.words):
                self.leaf()
        while self.stack:
            self.repaired = True
            self.close(self.stack[-1][0])
        assert self.root is not None  # every word went into an open constituent
        return self.root, self.repaired
