"""Encoding pairs to ids, token-bounded batches and padding them into tensors.

Batching follows Vaswani et al. (2017), section 5.1: "Sentence pairs were batched together by
approximate sequence length", each batch holding about as many source and target tokens as a
budget allows, rather than a fixed number of sentences.

Gradient accumulation belongs to the training loop: one optimizer step consumes ``accum``
consecutive batches of `TokenBatcher.epoch`, so a step sees up to
``accum * world_size * max_tokens`` padded target tokens (the paper's ~25,000 source and
~25,000 target tokens per step is e.g. 8 ranks x 1 x 3,125, or 1 rank x 8 x 3,125). Sum the loss
over target tokens and divide by the step's total ``n_tgt_tokens`` (all-reduced across ranks),
not by each batch's mean. Every rank gets the same number of batches per epoch, so ranks reach
each step (and each ``no_sync`` boundary) together; step on a last partial group of fewer than
``accum`` batches too. The batch count may differ by a few from epoch to epoch.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Sequence
from dataclasses import dataclass, fields, replace

import torch

from attnkit.data.tokenizers import Tokenizer
from attnkit.data.vocab import BOS, EOS, PAD, Vocabulary
from attnkit.errors import DataError

logger = logging.getLogger("attnkit")

Example = tuple[list[int], list[int]]  # (source ids, target ids), no BOS/EOS


@dataclass
class Batch:
    """A padded batch; ``*_keep`` masks are True at real tokens (the house mask rule).

    Attributes:
        src: (B, S) source ids, each row ending with EOS, then PAD.
        src_keep: (B, S) True where ``src`` is not padding; every row has at least one True.
        tgt_in: (B, T) decoder input: BOS + target.
        tgt_out: (B, T) decoder labels: target + EOS.
        tgt_keep: (B, T) True where ``tgt_out`` is not padding.
        n_src_tokens: Number of real source tokens (EOS included).
        n_tgt_tokens: Number of real target labels (EOS included): the loss's token count.
    """

    src: torch.Tensor
    src_keep: torch.Tensor
    tgt_in: torch.Tensor
    tgt_out: torch.Tensor
    tgt_keep: torch.Tensor
    n_src_tokens: int
    n_tgt_tokens: int

    def to(self, device: torch.device | str) -> Batch:
        """Return a copy with every tensor on ``device``."""
        values = {f.name: getattr(self, f.name) for f in fields(self)}
        tensors = {k: v.to(device) for k, v in values.items() if isinstance(v, torch.Tensor)}
        return replace(self, **tensors)


def encode_pairs(
    pairs: Sequence[tuple[str, str]],
    src_tok: Tokenizer,
    src_vocab: Vocabulary,
    tgt_tok: Tokenizer,
    tgt_vocab: Vocabulary,
    *,
    max_len: int,
) -> tuple[list[Example], dict[str, int]]:
    """Tokenize and encode text pairs, dropping (and counting) empty and over-long ones.

    Args:
        pairs: ``(source, target)`` text pairs.
        src_tok: Source tokenizer.
        src_vocab: Source vocabulary.
        tgt_tok: Target tokenizer.
        tgt_vocab: Target vocabulary.
        max_len: Most pieces allowed on either side (BOS/EOS not counted).

    Returns:
        ``(examples, dropped)``: id lists without BOS/EOS (`collate` adds them), and
        ``{"empty": n, "too_long": m}`` counts of dropped pairs (also logged).
    """
    examples: list[Example] = []
    dropped = {"empty": 0, "too_long": 0}
    for src_text, tgt_text in pairs:
        src_pieces, tgt_pieces = src_tok.tokenize(src_text), tgt_tok.tokenize(tgt_text)
        if not src_pieces or not tgt_pieces:
            dropped["empty"] += 1
        elif len(src_pieces) > max_len or len(tgt_pieces) > max_len:
            dropped["too_long"] += 1
        else:
            examples.append((src_vocab.encode(src_pieces), tgt_vocab.encode(tgt_pieces)))
    log = logger.warning if any(dropped.values()) else logger.info
    log(
        "encoded %d of %d pairs; dropped %d with an empty side, %d over %d pieces",
        len(examples),
        len(pairs),
        dropped["empty"],
        dropped["too_long"],
        max_len,
    )
    return examples, dropped


def sequence_lengths(examples: Sequence[Example]) -> tuple[list[int], list[int]]:
    """Padded-to lengths for `TokenBatcher`: source + EOS, and target + BOS (or + EOS).

    Args:
        examples: Examples from `encode_pairs`.

    Returns:
        ``(src_lengths, tgt_lengths)``, the lengths of each row of ``src`` and ``tgt_in``.
    """
    return [len(src) + 1 for src, _ in examples], [len(tgt) + 1 for _, tgt in examples]


class TokenBatcher:
    """Length-bucketed batches bounded by a padded-token budget, shuffled and sharded per epoch.

    Each epoch: (if ``shuffle``) permute the examples with seed ``seed + epoch``, stable-sort
    them by (source, target) length so ties fall differently each epoch, cut the sorted list
    greedily into batches whose padded source tokens (``B * S``) and padded target tokens
    (``B * T``) each stay within ``max_tokens`` (and ``B`` within ``max_sentences``), split the
    largest batches until the count
    divides by ``world_size``, (if ``shuffle``) shuffle the batch order, then give rank ``r``
    batches ``r, r + world_size, ...``. An example over the budget on its own is a batch of one.

    Args:
        src_lengths: Padded-to source length of each example (EOS included).
        tgt_lengths: Padded-to target length of each example (BOS or EOS included).
        max_tokens: Budget of padded tokens per batch, on each side.
        max_sentences: At most this many examples per batch (None: no limit).
        shuffle: Shuffle ties and batch order (training); off = sorted order (evaluation).
        seed: Base seed; an epoch's batches depend only on (seed, epoch).
        rank: This process's rank.
        world_size: Number of ranks.

    Raises:
        DataError: No examples, or fewer examples than ranks.
    """

    def __init__(
        self,
        src_lengths: Sequence[int],
        tgt_lengths: Sequence[int],
        *,
        max_tokens: int,
        shuffle: bool,
        seed: int,
        max_sentences: int | None = None,
        rank: int = 0,
        world_size: int = 1,
    ) -> None:
        if len(src_lengths) != len(tgt_lengths):
            raise ValueError(f"{len(src_lengths)} source but {len(tgt_lengths)} target lengths")
        if not 0 <= rank < world_size:
            raise ValueError(f"rank {rank} is outside world_size {world_size}")
        if len(src_lengths) < world_size or not src_lengths:
            n = len(src_lengths)
            raise DataError(f"{n} examples cannot give each of {world_size} ranks a batch")
        self.src_lengths, self.tgt_lengths = list(src_lengths), list(tgt_lengths)
        self.max_tokens, self.shuffle, self.seed = max_tokens, shuffle, seed
        self.max_sentences = max_sentences or len(src_lengths)
        self.rank, self.world_size = rank, world_size

    def epoch(self, e: int) -> list[list[int]]:
        """Return this rank's batches for epoch ``e`` (lists of example indices).

        Args:
            e: Epoch number; the same (seed, e) always gives the same batches.

        Returns:
            Batches; over all ranks each example appears exactly once, and every rank gets
            the same number of batches.
        """
        rng = random.Random(self.seed + e)
        order = list(range(len(self.src_lengths)))
        if self.shuffle:
            rng.shuffle(order)
        order.sort(key=lambda i: (self.src_lengths[i], self.tgt_lengths[i]))
        batches = self._split_until_divisible(self._pack(order))
        if self.shuffle:
            rng.shuffle(batches)
        mine = batches[self.rank :: self.world_size]
        logger.info(
            "epoch %d: %d batches on rank %d of %d, %.1f%% padding",
            e,
            len(mine),
            self.rank,
            self.world_size,
            100 * self.padding_ratio(mine),
        )
        return mine

    def padding_ratio(self, batches: Sequence[Sequence[int]]) -> float:
        """Share of padded positions (source and target together) that are padding.

        Args:
            batches: Batches of example indices.

        Returns:
            ``1 - real tokens / padded tokens``, 0.0 for no batches.
        """
        real = padded = 0
        for batch in batches:
            for lengths in (self.src_lengths, self.tgt_lengths):
                batch_lengths = [lengths[i] for i in batch]
                real += sum(batch_lengths)
                padded += max(batch_lengths) * len(batch_lengths)
        return 1 - real / padded if padded else 0.0

    def _pack(self, order: list[int]) -> list[list[int]]:
        """Cut length-sorted indices into batches within the padded-token budget."""
        batches: list[list[int]] = []
        batch: list[int] = []
        max_src = max_tgt = 0
        for i in order:
            new_src, new_tgt = max(max_src, self.src_lengths[i]), max(max_tgt, self.tgt_lengths[i])
            size = len(batch) + 1
            full = size > self.max_sentences or new_src * size > self.max_tokens or new_tgt * size > self.max_tokens
            if batch and full:
                batches.append(batch)
                batch, new_src, new_tgt = [], self.src_lengths[i], self.tgt_lengths[i]
            batch.append(i)
            max_src, max_tgt = new_src, new_tgt
        if batch:
            batches.append(batch)
        return batches

    def _split_until_divisible(self, batches: list[list[int]]) -> list[list[int]]:
        """Halve the largest batches until every rank can get the same number of batches.

        A half pads to at most the whole's lengths, so it keeps the budget. Only if every batch
        is a single example (a budget below two examples) are the last few batches dropped.
        """
        while len(batches) % self.world_size:
            largest = max(range(len(batches)), key=lambda b: len(batches[b]))
            batch = batches[largest]
            if len(batch) == 1:
                extra = len(batches) % self.world_size
                logger.warning("dropped %d one-example batches to give every rank as many", extra)
                return batches[: len(batches) - extra]
            half = len(batch) // 2
            batches[largest : largest + 1] = [batch[:half], batch[half:]]
        return batches


def collate(
    examples: Sequence[Example],
    indices: Sequence[int],
    pad_id: int = PAD,
    bos: int = BOS,
    eos: int = EOS,
) -> Batch:
    """Pad the chosen examples into a `Batch` (sources + EOS; targets shifted by BOS/EOS).

    Args:
        examples: All examples, from `encode_pairs`.
        indices: The examples to put in this batch (one `TokenBatcher` batch).
        pad_id: Padding id.
        bos: Begin-of-sentence id, prepended to ``tgt_in``.
        eos: End-of-sentence id, appended to ``src`` and ``tgt_out``.

    Returns:
        The batch, on the CPU.
    """
    srcs = [examples[i][0] + [eos] for i in indices]
    tgts = [examples[i][1] for i in indices]
    src, src_keep = pad(srcs, pad_id)  # (B, S)
    tgt_in, tgt_keep = pad([[bos] + t for t in tgts], pad_id)  # (B, T)
    tgt_out, _ = pad([t + [eos] for t in tgts], pad_id)  # (B, T)
    return Batch(src, src_keep, tgt_in, tgt_out, tgt_keep, int(src_keep.sum()), int(tgt_keep.sum()))


def pad(rows: Sequence[Sequence[int]], pad_id: int = PAD) -> tuple[torch.Tensor, torch.Tensor]:
    """Right-pad id lists to one length; return ids (B, L) and keep mask (B, L) (the one padder)."""
    lengths = torch.tensor([len(row) for row in rows])  # (B,)
    ids = torch.full((len(rows), int(lengths.max())), pad_id, dtype=torch.long)  # (B, L)
    for b, row in enumerate(rows):
        ids[b, : len(row)] = torch.tensor(row, dtype=torch.long)
    keep = torch.arange(ids.size(1)) < lengths[:, None]  # (B, L)
    return ids, keep
