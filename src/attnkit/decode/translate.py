"""Translate text with a trained model: tokenize, batch by length, search, detokenize.

Sentences are sorted by length so each batch carries little padding, decoded with greedy or beam
search (`beam == 1` is greedy), and returned in input order with their n-best lists and, on request,
the cross-attention of each output token.

On a CPU, `SearchSettings.workers` batches are decoded at once, each by its own thread with one
intra-op thread, instead of one batch at a time with all threads. A decoding step is many small
operations (the matrices have one row per beam), so intra-op threads mostly wait on each other;
parallel batches keep every core busy. A sentence's output does not change: the batches are the
same, only their order of work differs. A line of more than `SearchSettings.max_src_len` pieces
is refused with an error naming it: decoding time grows with the square of the length, so one
runaway line (say 100,000 characters) would otherwise stall the whole input.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Callable, Iterator, Sequence

import torch
from torch import Tensor, nn

from attnkit.data.batching import collate
from attnkit.decode.beam import beam_search
from attnkit.decode.greedy import greedy
from attnkit.errors import DataError
from attnkit.runs import Vocabs


@dataclass
class Translation:
    """One output hypothesis with its pieces, for display and attention export."""

    text: str
    score: float
    log_prob: float
    finished: bool
    src_pieces: list[str]
    tgt_pieces: list[str]
    attention: Tensor | None  # (T, S): target pieces (+EOS) x source pieces (+EOS)


@dataclass(frozen=True)
class SearchSettings:
    beam: int = 4
    alpha: float = 0.6
    nbest: int = 1
    max_len_a: float = 1.0
    max_len_b: int = 50
    batch_size: int = 64
    max_src_len: int = 1024  # source pieces per line (the Transformer's default max_positions)
    workers: int | None = None  # CPU batches decoded at once (None: torch.get_num_threads()); 1 on GPUs


def _batches(lengths: Sequence[int], batch_size: int) -> Iterator[list[int]]:
    order = sorted(range(len(lengths)), key=lambda i: lengths[i])
    for start in range(0, len(order), batch_size):
        yield order[start : start + batch_size]


@torch.inference_mode()
def translate(
    model: nn.Module,
    vocabs: Vocabs,
    lines: Sequence[str],
    settings: SearchSettings = SearchSettings(),
    *,
    device: torch.device | str = "cpu",
    return_attention: bool = False,
    progress: Callable[[int], None] | None = None,
    source: str = "input",
) -> list[list[Translation]]:
    """Translate `lines`; returns the n-best list of each line, in input order.

    Raises:
        DataError: A line has more than `settings.max_src_len` pieces (`source` names the input).
    """
    src_pieces = [vocabs.src_tokenizer.tokenize(line) for line in lines]
    for number, pieces in enumerate(src_pieces, start=1):
        if len(pieces) > settings.max_src_len:
            limit = settings.max_src_len
            raise DataError(f"{source}, line {number}: {len(pieces)} pieces, more than the {limit} a line may have")
    examples = [(vocabs.src_vocab.encode(p), []) for p in src_pieces]  # collate appends EOS
    results: list[list[Translation]] = [[] for _ in lines]

    def decode(index: list[int]) -> None:
        batch = collate(examples, index).to(device)
        if settings.beam == 1:
            nbests = [[h] for h in greedy(model, batch.src, batch.src_keep, max_len_a=settings.max_len_a,
                                          max_len_b=settings.max_len_b, return_attention=return_attention)]
        else:
            nbests = beam_search(model, batch.src, batch.src_keep, beam=settings.beam, alpha=settings.alpha,
                                 nbest=settings.nbest, max_len_a=settings.max_len_a, max_len_b=settings.max_len_b,
                                 return_attention=return_attention)
        for i, hyps in zip(index, nbests):
            results[i] = [_to_translation(h, src_pieces[i], vocabs) for h in hyps]
        if progress is not None:
            progress(len(index))

    batches = list(_batches([len(src) for src, _ in examples], settings.batch_size))
    workers = 1 if torch.device(device).type != "cpu" else min(settings.workers or torch.get_num_threads(), len(batches))
    if workers <= 1:
        for index in batches:
            decode(index)
        return results
    with _intra_op_threads(1), ThreadPoolExecutor(workers) as pool:
        list(pool.map(decode, batches))  # list() re-raises a worker's exception here
    return results


@contextmanager
def _intra_op_threads(n: int) -> Iterator[None]:
    """Run with `n` intra-op threads (a process-wide PyTorch setting), then restore the previous count."""
    before = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def _to_translation(hyp, src_pieces: list[str], vocabs: Vocabs) -> Translation:
    tgt_pieces = vocabs.tgt_vocab.decode(hyp.tokens)
    return Translation(
        text=vocabs.tgt_tokenizer.detokenize(tgt_pieces),
        score=hyp.score,
        log_prob=hyp.log_prob,
        finished=hyp.finished,
        src_pieces=src_pieces + ["</s>"],
        tgt_pieces=tgt_pieces + (["</s>"] if hyp.finished else []),
        attention=hyp.attention,
    )
