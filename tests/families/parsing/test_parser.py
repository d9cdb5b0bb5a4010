"""The word pointer (`families.parsing.model.Parser`): p_t counted by hand, and decoding step by step
(greedy rows or beams) computes exactly the teacher-forced logits."""

from __future__ import annotations

import pytest
import torch

from attnkit.data.batching import collate
from attnkit.data.vocab import BOS
from attnkit.decode.beam_state import expand_to_beams
from attnkit.families.parsing.codec import build_vocabs, encode_tree
from attnkit.families.parsing.config import ParseData, ParseModel, ParseRun
from attnkit.families.parsing.model import Parser
from attnkit.families.parsing.task import build
from attnkit.families.parsing.trees import parse_trees

TREES = parse_trees("(S (NP (DT the) (NN dog)) (VP (VBZ barks)) (. .)) (S (NP (PRP it)) (VP (VBD saw) (NP (DT a) (NN cat)))) (FRAG (RB no) (. .))")


def parser(keep_words: bool):
    vocabs = build_vocabs(TREES, keep_words=keep_words, min_freq=1)
    run = ParseRun(task="parsing", data=ParseData(treebank="unused"), train={"max_steps": 1},
                   model=ParseModel(layers=2, d_model=16, n_heads=2, d_ff=32, dropout=0.0, pointer=True))  # fmt: skip
    torch.manual_seed(0)
    model = build(run, vocabs).eval()
    assert isinstance(model, Parser)
    return model, vocabs


def test_the_pointer_is_the_next_word_then_the_source_eos():
    model, vocabs = parser(keep_words=False)
    batch = collate([encode_tree(vocabs, TREES[2])], [0])  # (FRAG XX XX )FRAG: 2 words + EOS
    assert batch.tgt_in[0, 0] == BOS and vocabs.symbols.decode(batch.tgt_in[0].tolist()) == ["(FRAG", "XX", "XX", ")FRAG"]
    # reading <s> (FRAG XX XX )FRAG: the word the next leaf would be (0, 0, 1), then the source EOS (2)
    assert model.pointers(batch.tgt_in, batch.src_keep)[0].tolist() == [0, 0, 1, 2, 2]


@pytest.mark.parametrize("keep_words", [False, True])
@pytest.mark.parametrize("beam", [1, 3])
def test_steps_compute_the_teacher_forced_logits(keep_words, beam):
    model, vocabs = parser(keep_words)
    batch = collate([encode_tree(vocabs, tree) for tree in TREES], range(len(TREES)))
    with torch.no_grad():
        expected = model(batch.src, batch.src_keep, batch.tgt_in)  # (B, T, V)
        state = expand_to_beams(model.init_state(model.encode(batch.src, batch.src_keep), batch.src_keep), beam)
        rows = batch.tgt_in.repeat_interleave(beam, dim=0)  # (B*K, T): every beam of a sentence reads its tree
        steps = []
        for t in range(rows.size(1)):
            logits, state, _ = model.step(rows[:, t : t + 1], state)  # (B*K, V)
            steps.append(logits)
    got = torch.stack(steps, dim=1).view(len(TREES), beam, rows.size(1), -1)  # (B, K, T, V)
    keep = batch.tgt_in != 0  # (B, T)
    for k in range(beam):
        torch.testing.assert_close(got[:, k][keep], expected[keep], atol=1e-5, rtol=1e-5)


def test_tags_punctuation_by_its_form_and_only_punctuation():
    from attnkit.config.schema import Decode
    from attnkit.families.parsing.infer import parse_words

    vocabs = build_vocabs(TREES, keep_words=False, min_freq=1, tags=True)
    run = ParseRun(task="parsing", data=ParseData(treebank="unused"), train={"max_steps": 1},
                   model=ParseModel(layers=1, d_model=16, n_heads=2, d_ff=32, dropout=0.0, tagger=True))  # fmt: skip
    torch.manual_seed(0)
    model = build(run, vocabs).eval()
    assert isinstance(model, Parser) and model.pointer is None and model.tagger is not None
    with torch.no_grad():
        model.tagger.bias.copy_(torch.tensor([10.0 if t == "." else 0.0 for t in vocabs.tags.to_json()["tokens"]]))  # wants "." everywhere
    (result,) = parse_words(model, vocabs, [["the", "dog", "barks", "."]], Decode(beam=1))
    tags = result.tags
    assert tags is not None and tags == result.tree.tags()  # the tree carries the tagger's tags
    assert tags[-1] == "." and "." not in tags[:-1] and all(t in vocabs.tags and t not in ("<unk>", "<pad>") for t in tags)


def test_the_parser_decodes_with_the_core_head_mask():
    """The core's decode-time masking (`models.head_mask`) works on the parser: each masked step is the
    masked teacher-forced pass, and the mask changes the logits."""
    from attnkit.models.head_mask import MaskedDecoding, parse_head_mask

    model, vocabs = parser(keep_words=False)
    batch = collate([encode_tree(vocabs, tree) for tree in TREES], range(len(TREES)))
    mask = parse_head_mask("encoder:1.2,decoder_self:2.1,cross:1.1", model)
    masked = MaskedDecoding(model, mask)
    with torch.no_grad():
        expected = model(batch.src, batch.src_keep, batch.tgt_in, mask)  # (B, T, V)
        assert not torch.allclose(expected, model(batch.src, batch.src_keep, batch.tgt_in), atol=1e-4)
        state = masked.init_state(masked.encode(batch.src, batch.src_keep), batch.src_keep)
        steps = []
        for t in range(batch.tgt_in.size(1)):
            logits, state, _ = masked.step(batch.tgt_in[:, t : t + 1], state)  # (B, V)
            steps.append(logits)
    keep = batch.tgt_in != 0  # (B, T)
    torch.testing.assert_close(torch.stack(steps, dim=1)[keep], expected[keep], atol=1e-5, rtol=1e-5)
