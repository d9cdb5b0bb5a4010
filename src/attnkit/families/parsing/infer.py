"""Parse sentences with a trained model: encode the words, search under the tree constraint, build trees.

Sentences are sorted by length and batched, decoded greedily (`beam == 1`) or with beam search
through `constrained.ConstrainedDecoder`, and returned in input order. Every output that ends
with EOS is a valid tree (`linear.delinearise`); one cut at the step limit is mended by
`linear.repair`, and `ParseResult.repaired` says so (`attnkit evaluate` counts them).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch
from torch import Tensor, nn

from attnkit.config.schema import Decode
from attnkit.data.batching import collate
from attnkit.data.vocab import BOS, EOS, SPECIALS, Vocabulary
from attnkit.decode.beam import beam_search
from attnkit.decode.greedy import greedy
from attnkit.decode.hypothesis import Hypothesis
from attnkit.errors import DataError
from attnkit.families.parsing.codec import PUNCTUATION_TAGS, ParseVocabs, encode_words, guess_tags, leaf_table
from attnkit.families.parsing.constrained import ConstrainedDecoder, SymbolTables
from attnkit.families.parsing.linear import PLACEHOLDER, delinearise, is_close, is_open, repair
from attnkit.families.parsing.trees import Tree


@dataclass
class ParseResult:
    """One parse: the tree, the symbols the search wrote, and its cross-attention."""

    words: list[str]
    tree: Tree
    symbols: list[str]  # without EOS
    score: float
    finished: bool
    repaired: bool
    attention: Tensor | None  # (T, S): output symbols (+EOS if finished) x words + EOS
    tags: list[str] | None = None  # the model's tagger's tags (`predict_tags`), if it has one


def tag_accuracy(results: Sequence[ParseResult], gold: Sequence[Sequence[str]]) -> float:
    """Percentage of words whose tagger tag (`ParseResult.tags`) is the gold one."""
    pairs = [(p, g) for r, tags in zip(results, gold) for p, g in zip(r.tags or [], tags)]
    return 100 * sum(p == g for p, g in pairs) / max(len(pairs), 1)


def decoder(model: nn.Module, vocabs: ParseVocabs, decode: Decode) -> ConstrainedDecoder:
    """`model` with its search constrained to trees, for `decode`'s step limit."""
    tables = SymbolTables.build(vocabs.symbols, leaf_table(vocabs))
    return ConstrainedDecoder(model, tables, max_len_a=decode.max_len_a, max_len_b=decode.max_len_b)


def to_tree(symbols: Sequence[str], words: Sequence[str], tags: Sequence[str] | None, finished: bool) -> tuple[Tree, bool]:
    """The tree of a search output and whether it had to be repaired (leaf symbols read as ``XX``)."""
    plain = [s if is_open(s) or is_close(s) else PLACEHOLDER for s in symbols]
    if finished:
        try:
            return delinearise(plain, words, tags), False
        except DataError:
            pass
    return repair(plain, words, tags)[0], True


def predict_tags(model: nn.Module, vocabs: ParseVocabs, words: Sequence[Sequence[str]], src: Tensor, src_keep: Tensor) -> list[list[str]]:
    """The tags of a batch of sentences (`words`, encoded as src (B, S)): the tagger's most likely tag
    of each word, except that punctuation gets its PTB tag by its form (`codec.guess_tags`) and only
    punctuation does (COLLINS.prm deletes words by those tags)."""
    return best_tags(model.tag_logits(model.encode(src, src_keep)).float(), vocabs.tags, words)  # (B, S, n_tags)


def best_tags(logits: Tensor, tags: Vocabulary | None, words: Sequence[Sequence[str]]) -> list[list[str]]:
    """The most likely tag of each word of logits (B, S, n_tags) (position s: word s), except that
    punctuation gets its PTB tag by its form and only punctuation does (`predict_tags`)."""
    assert tags is not None
    tokens = tags.to_json()["tokens"]
    never = [i for i, t in enumerate(tokens) if i < len(SPECIALS) or t in PUNCTUATION_TAGS.values()]
    logits[..., never] = float("-inf")
    best = logits.argmax(dim=-1)  # (B, S)
    return [[PUNCTUATION_TAGS.get(w, tokens[t]) for w, t in zip(ws, row.tolist())] for ws, row in zip(words, best)]


@torch.inference_mode()
def parse_words(
    model: nn.Module,
    vocabs: ParseVocabs,
    sentences: Sequence[Sequence[str]],
    decode: Decode,
    *,
    tags: Sequence[Sequence[str]] | None = None,
    return_attention: bool = False,
    source: str = "input",
    progress: Callable[[int], None] | None = None,
) -> list[ParseResult]:
    """Parse tokenised sentences. The trees carry `tags` (gold, for scoring), else the model's
    tagger's (`predict_tags`, also in `ParseResult.tags`), else `codec.guess_tags`. `progress(n)` is
    called with the number of sentences of each batch parsed.

    Raises:
        DataError: A sentence with no words, or longer than `decode.max_src_len` (naming it).
    """
    ids = encode_words(vocabs, sentences, decode.max_src_len, source)
    device = next(model.parameters()).device
    search = decoder(model, vocabs, decode)
    hyps: list[Hypothesis | None] = [None] * len(ids)
    predicted: list[list[str] | None] = [None] * len(ids)
    order = sorted(range(len(ids)), key=lambda i: len(ids[i]))
    for start in range(0, len(order), decode.batch_size):
        index = order[start : start + decode.batch_size]
        batch = collate([(ids[i], []) for i in index], range(len(index))).to(device)
        if getattr(model, "tagger", None) is not None:
            for i, row in zip(index, predict_tags(model, vocabs, [sentences[i] for i in index], batch.src, batch.src_keep)):
                predicted[i] = row
        if decode.beam == 1:
            found = greedy(search, batch.src, batch.src_keep, max_len_a=decode.max_len_a, max_len_b=decode.max_len_b,
                           bos=BOS, eos=EOS, return_attention=return_attention)  # fmt: skip
        else:
            found = [n[0] for n in beam_search(search, batch.src, batch.src_keep, beam=decode.beam, alpha=decode.alpha, nbest=1,
                                               max_len_a=decode.max_len_a, max_len_b=decode.max_len_b, bos=BOS, eos=EOS,
                                               return_attention=return_attention)]  # fmt: skip
        for i, hyp in zip(index, found):
            hyps[i] = hyp
        if progress is not None:
            progress(len(index))
    results = []
    for i, hyp in enumerate(hyps):
        assert hyp is not None
        words = list(sentences[i])
        symbols = vocabs.symbols.decode(hyp.tokens)
        tree, repaired = to_tree(symbols, words, tags[i] if tags is not None else predicted[i] or guess_tags(words), hyp.finished)
        results.append(ParseResult(words, tree, symbols, hyp.score, hyp.finished, repaired, hyp.attention, predicted[i]))
    return results
