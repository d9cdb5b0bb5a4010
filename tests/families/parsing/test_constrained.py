"""The constrained search: its tensor mask is `LinearState.allowed`, and every output of an
untrained model, greedy or beam, is a tree over exactly the input words."""

from __future__ import annotations

import random

import pytest
import torch

from attnkit.config.schema import Decode
from attnkit.data.batching import collate
from attnkit.data.vocab import BOS, EOS
from attnkit.decode.beam_state import check_batch_first, gather_beams
from attnkit.families.parsing.codec import build_vocabs, leaf_table
from attnkit.families.parsing.config import ParseData, ParseModel, ParseRun
from attnkit.families.parsing.constrained import ConstrainedDecoder, SymbolTables
from attnkit.families.parsing.infer import parse_words
from attnkit.families.parsing.linear import EOS as EOS_SYMBOL
from attnkit.families.parsing.linear import LinearState
from attnkit.families.parsing.task import build
from attnkit.families.parsing.trees import parse_trees

TREES = parse_trees(
    "(S (NP (DT the) (NN dog)) (VP (VBZ barks)) (. .)) (S (NP (PRP it)) (VP (VBD saw) (NP (DT a) (NN cat))))"
    " (NP (NP (DT the) (NN end)) (PP (IN of) (NP (NN time)))) (FRAG (RB no) (. .))"
)
WORDS = sorted({w for t in TREES for w in t.words()}) + ["unseen"]


def tiny(vocabs, pointer: bool = False) -> torch.nn.Module:
    """An untrained parser: the plain Transformer, or with `pointer` the word-pointer `Parser`."""
    torch.manual_seed(0)
    run = ParseRun(task="parsing", data=ParseData(treebank="unused"), train={"max_steps": 1},
                   model=ParseModel(layers=1, d_model=16, n_heads=2, d_ff=32, dropout=0.0, pointer=pointer))  # fmt: skip
    return build(run, vocabs).eval()


def random_sentences(n: int, seed: int) -> list[list[str]]:
    rng = random.Random(seed)
    return [[rng.choice(WORDS) for _ in range(rng.randint(1, 12))] for _ in range(n)]


@pytest.mark.parametrize("keep_words", [False, True])
def test_the_mask_is_linear_state_allowed_along_random_walks(keep_words):
    vocabs = build_vocabs(TREES, keep_words=keep_words, min_freq=1)
    tokens = vocabs.symbols.to_json()["tokens"]
    search = ConstrainedDecoder(tiny(vocabs), SymbolTables.build(vocabs.symbols, leaf_table(vocabs)), max_len_a=1.0, max_len_b=6)
    rng = random.Random(1)
    for words in random_sentences(30, seed=2):
        batch = collate([(vocabs.words.encode(words), [])], [0])
        state = search.init_state(search.encode(batch.src, batch.src_keep), batch.src_keep)
        check_batch_first(state, 1)
        leaves = ["<unk>" if w == "unseen" else w for w in words]
        linear = LinearState.start(leaves, keep_words=keep_words, max_len=len(words) + 1 + 6)
        prev = torch.tensor([[BOS]])
        while True:
            logits, state, _ = search.step(prev, state)
            mask = [tokens[i] for i in torch.isfinite(logits[0]).nonzero()[:, 0].tolist()]
            expected = [EOS_SYMBOL if s == "</s>" else s for s in linear.allowed(["<unk>", *tokens[4:], EOS_SYMBOL])]
            assert sorted("</s>" if s == EOS_SYMBOL else s for s in expected) == sorted(mask)
            choice = rng.choice(mask)
            if choice == "</s>":
                break
            linear = linear.step(choice)
            prev = torch.tensor([[vocabs.symbols.encode([choice])[0]]])
        assert linear.done


@pytest.mark.parametrize("pointer", [False, True])
@pytest.mark.parametrize("keep_words", [False, True])
@pytest.mark.parametrize("beam", [1, 3])
def test_every_search_output_is_a_tree_over_the_input_words(keep_words, beam, pointer):
    vocabs = build_vocabs(TREES, keep_words=keep_words, min_freq=1)
    sentences = random_sentences(200, seed=beam)
    results = parse_words(tiny(vocabs, pointer), vocabs, sentences, Decode(beam=beam, alpha=0.3, max_len_b=8, batch_size=50))
    assert [r.tree.words() for r in results] == sentences
    assert all(r.finished and not r.repaired for r in results)  # the constraint finishes within the step limit
    assert all(len(r.symbols) < len(words) + 1 + 8 for r, words in zip(results, sentences))


def test_a_step_limit_shorter_than_any_tree_falls_back_to_repair():
    vocabs = build_vocabs(TREES, keep_words=False, min_freq=1)
    sentences = random_sentences(20, seed=5)
    results = parse_words(tiny(vocabs), vocabs, sentences, Decode(beam=2, max_len_a=0.0, max_len_b=2))
    assert [r.tree.words() for r in results] == sentences
    assert all(r.repaired for r in results)


def test_the_constraint_state_is_reordered_with_the_beams():
    vocabs = build_vocabs(TREES, keep_words=False, min_freq=1)
    search = ConstrainedDecoder(tiny(vocabs), SymbolTables.build(vocabs.symbols, leaf_table(vocabs)), max_len_a=1.0, max_len_b=10)
    batch = collate([(vocabs.words.encode(["the", "dog"]), []), (vocabs.words.encode(["no"]), [])], [0, 1])
    state = search.init_state(search.encode(batch.src, batch.src_keep), batch.src_keep)
    _, state, _ = search.step(torch.tensor([[BOS], [BOS]]), state)
    _, state, _ = search.step(torch.tensor([[vocabs.symbols.encode(["(S"])[0]], [EOS]]), state)
    swapped = gather_beams(state, torch.tensor([1, 0]))
    assert swapped.depth.tolist() == [0, 1] and swapped.n_words.tolist() == [1, 2]
