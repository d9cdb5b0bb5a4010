"""Translate text with a trained model: tokenize, batch by length, search, detokenize.

Sentences are sorted by length so each batch carries little padding, decoded with greedy or beam
search (`beam == 1` is greedy), and returned in input order with their n-best lists and, on request,
the cross-attention of each output token.

On a CPU, `Decode.workers` batches are decoded at once, each by its own thread with one
intra-op thread, instead of one batch at a time with all threads. A decoding step is many small
operations (the matrices have one row per beam), so intra-op threads mostly wait on each other;
parallel batches keep every core busy. A sentence's output does not change: the batches are the
same, only their order of work differs. A line of more than `Decode.max_src_len` pieces
is refused with an error naming it: decoding time grows with the square of the length, so one
runaway line (say 100,000 characters) would otherwise stall the whole input.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor, nn

from attnkit.artifacts.runs import LoadedRun
from attnkit.config.schema import Decode
from attnkit.data.batching import collate
from attnkit.data.vocab import BOS, EOS
from attnkit.decode.beam import beam_search
from attnkit.decode.greedy import greedy
from attnkit.decode.hypothesis import Hypothesis
from attnkit.families.translation.codec import Vocabs, encode_sources


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


def length_batches(lengths: Sequence[int], batch_size: int) -> Iterator[list[int]]:
    """Indices of the inputs in batches of `batch_size`, shortest first (little padding per batch)."""
    order = sorted(range(len(lengths)), key=lambda i: lengths[i])
    for start in range(0, len(order), batch_size):
        yield order[start : start + batch_size]


@torch.inference_mode()
def translate(
    model: nn.Module,
    vocabs: Vocabs,
    lines: Sequence[str],
    decode: Decode = Decode(),
    *,
    device: torch.device | str = "cpu",
    return_attention: bool = False,
    progress: Callable[[int], None] | None = None,
    source: str = "input",
) -> list[list[Translation]]:
    """Translate `lines`; returns the n-best list of each line, in input order.

    Raises:
        DataError: A line has more than `decode.max_src_len` pieces (`source` names the input).
    """
    src_pieces, src_ids = encode_sources(vocabs, lines, decode.max_src_len, source)
    hyps = search_ids(model, src_ids, decode, device=device, return_attention=return_attention, progress=progress)
    return [[to_translation(h, pieces, vocabs) for h in nbest] for nbest, pieces in zip(hyps, src_pieces)]


def translate_run(loaded: LoadedRun, lines: Sequence[str], decode: Decode, *, model: nn.Module | None = None, **options: Any) -> list[list[Translation]]:
    """`translate` with the run's engine (`LoadedRun.engine`, `--engine`), else with attnkit's search of `model`
    (default: the run's); `options` are `translate`'s."""
    if loaded.engine is not None:
        return loaded.engine.translate(loaded.model, loaded.vocabs, lines, decode, **options)
    return translate(loaded.model if model is None else model, loaded.vocabs, lines, decode, **options)


@torch.inference_mode()
def search_ids(
    model: nn.Module,
    src_ids: Sequence[list[int]],
    decode: Decode,
    *,
    device: torch.device | str = "cpu",
    return_attention: bool = False,
    progress: Callable[[int], None] | None = None,
) -> list[list[Hypothesis]]:
    """The n-best hypotheses of each encoded source (ids without EOS), in input order."""
    examples = [(ids, []) for ids in src_ids]  # collate appends EOS
    results: list[list[Hypothesis]] = [[] for _ in examples]

    def run(index: list[int]) -> None:
        batch = collate(examples, index).to(device)
        if decode.beam == 1:
            nbests = [[h] for h in greedy(model, batch.src, batch.src_keep, max_len_a=decode.max_len_a,
                                          max_len_b=decode.max_len_b, return_attention=return_attention, bos=BOS, eos=EOS)]  # fmt: skip
        else:
            nbests = beam_search(model, batch.src, batch.src_keep, beam=decode.beam, alpha=decode.alpha,
                                 nbest=decode.nbest, max_len_a=decode.max_len_a, max_len_b=decode.max_len_b,
                                 return_attention=return_attention, bos=BOS, eos=EOS)  # fmt: skip
        for i, hyps in zip(index, nbests):
            results[i] = hyps
        if progress is not None:
            progress(len(index))

    batches = list(length_batches([len(ids) for ids in src_ids], decode.batch_size))
    workers = 1 if torch.device(device).type != "cpu" else min(decode.workers or torch.get_num_threads(), len(batches))
    if workers <= 1:
        for index in batches:
            run(index)
        return results
    with _intra_op_threads(1), ThreadPoolExecutor(workers) as pool:
        list(pool.map(run, batches))  # list() re-raises a worker's exception here
    return results


def detokenize(vocabs: Vocabs, hyp: Hypothesis) -> str:
    """A hypothesis' text."""
    return vocabs.tgt_tokenizer.detokenize(vocabs.tgt_vocab.decode(hyp.tokens))


@contextmanager
def _intra_op_threads(n: int) -> Iterator[None]:
    """Run with `n` intra-op threads (a process-wide PyTorch setting), then restore the previous count."""
    before = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def to_translation(hyp: Hypothesis, src_pieces: list[str], vocabs: Vocabs) -> Translation:
    """A hypothesis of a source of `src_pieces` (no EOS) as text and pieces."""
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
