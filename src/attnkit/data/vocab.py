"""Vocabulary: token <-> id, with the four specials at fixed ids (PAD 0, UNK 1, BOS 2, EOS 3).

SentencePiece models trained by `attnkit.data.tokenizers.train_sentencepiece` put the same
surface forms at the same ids, so a Vocabulary read from such a model agrees with it id for id.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any

from attnkit.errors import DataError

PAD, UNK, BOS, EOS = 0, 1, 2, 3
SPECIALS = ("<pad>", "<unk>", "<s>", "</s>")


class Vocabulary:
    """An ordered token list: the specials first, then the ordinary tokens.

    Args:
        tokens: Ordinary tokens in id order (ids start at ``len(SPECIALS)``); must not repeat
            each other or a special.

    Raises:
        DataError: A token appears twice (or is a special).
    """

    def __init__(self, tokens: Sequence[str]) -> None:
        self._itos = (*SPECIALS, *tokens)
        self._stoi = {token: i for i, token in enumerate(self._itos)}
        if len(self._stoi) != len(self._itos):
            counts = Counter(self._itos)
            duplicate = next(t for t in self._itos if counts[t] > 1)
            raise DataError(f"vocabulary: token {duplicate!r} appears twice")
        for special in ("<pad>", "<s>", "</s>"):
            # Text that happens to spell a control token is an unknown word, not a control.
            del self._stoi[special]

    @classmethod
    def build(cls, token_lists: Iterable[Sequence[str]], min_freq: int = 1, max_size: int | None = None) -> Vocabulary:
        """Count tokens and keep the frequent ones.

        Args:
            token_lists: Tokenized sentences.
            min_freq: Keep tokens seen at least this often.
            max_size: Largest vocabulary size, the four specials included; ``None`` = no limit.

        Returns:
            A Vocabulary ordered by frequency (descending), ties broken by the token's text,
            so the same data always gives the same ids.
        """
        counts = Counter(token for tokens in token_lists for token in tokens)
        for special in SPECIALS:
            counts.pop(special, None)
        frequent = (token for token, count in counts.items() if count >= min_freq)
        ranked = sorted(frequent, key=lambda token: (-counts[token], token))
        if max_size is not None:
            ranked = ranked[: max(max_size - len(SPECIALS), 0)]
        return cls(ranked)

    def __len__(self) -> int:
        return len(self._itos)

    def __contains__(self, token: object) -> bool:
        """True for an ordinary token of the vocabulary (or ``<unk>``)."""
        return token in self._stoi

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Vocabulary) and self._itos == other._itos

    def __repr__(self) -> str:
        return f"Vocabulary({len(self)} tokens)"

    def encode(self, pieces: Iterable[str], add_bos: bool = False, add_eos: bool = False) -> list[int]:
        """Map pieces to ids; unknown pieces and text spelling ``<pad>``/``<s>``/``</s>`` -> UNK.

        Args:
            pieces: Tokens from a tokenizer.
            add_bos: Prepend BOS.
            add_eos: Append EOS.

        Returns:
            The ids.
        """
        ids = [self._stoi.get(piece, UNK) for piece in pieces]
        return [BOS] * add_bos + ids + [EOS] * add_eos

    def decode(self, ids: Iterable[int]) -> list[str]:
        """Map ids back to pieces: stop at the first EOS, drop PAD and BOS.

        Args:
            ids: Token ids (ints, or 0-d tensors).

        Returns:
            The pieces; UNK comes back as ``"<unk>"``.
        """
        pieces = []
        for i in map(int, ids):
            if i == EOS:
                break
            if i not in (PAD, BOS):
                pieces.append(self._itos[i])
        return pieces

    def to_json(self) -> dict[str, Any]:
        """Return a JSON-ready dict (``{"tokens": [...]}``, specials included) for `from_json`."""
        return {"tokens": list(self._itos)}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Vocabulary:
        """Rebuild a Vocabulary saved with `to_json`.

        Args:
            data: The dict `to_json` returned.

        Returns:
            An equal Vocabulary.

        Raises:
            DataError: The dict has no token list or its first tokens are not the specials.
        """
        tokens = data.get("tokens") if isinstance(data, dict) else None
        if not isinstance(tokens, list) or tuple(tokens[: len(SPECIALS)]) != SPECIALS:
            raise DataError(f"vocabulary JSON: expected 'tokens' starting with {list(SPECIALS)}")
        return cls(tokens[len(SPECIALS) :])
