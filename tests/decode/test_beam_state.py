"""map_state / expand_to_beams / gather_beams on nested states, and the BeamState bookkeeping."""

from __future__ import annotations

from collections import namedtuple
from dataclasses import dataclass, field

import pytest
import torch
from decode_toys import ToyGRU, random_batch

from attnkit.decode.beam_state import BeamState, check_batch_first, expand_to_beams, gather_beams, map_state, per_sentence, picked_by

Pair = namedtuple("Pair", "left right")


@dataclass(frozen=True)
class Leaf:
    x: torch.Tensor  # (B, 2)
    tag: str = "leaf"
    derived: int = field(init=False, default=0)


@dataclass
class Nested:
    a: torch.Tensor  # (B,)
    layers: list  # [Leaf | None]
    pair: Pair  # (tensor (B, 1, 3), int)
    table: dict
    count: int = 7


def make(batch: int) -> Nested:
    a = torch.arange(batch)  # (B,)
    return Nested(
        a=a,
        layers=[Leaf(torch.stack([a, -a], dim=1)), None],
        pair=Pair(a.float().view(batch, 1, 1).expand(batch, 1, 3).clone(), 5),
        table={"k": a * 10},
    )


def test_expand_then_gather_round_trip() -> None:
    state = make(3)
    wide = expand_to_beams(state, 4)
    assert wide.a.tolist() == [0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2]
    assert wide.layers[0].x.shape == (12, 2) and wide.pair.left.shape == (12, 1, 3)
    back = gather_beams(wide, torch.tensor([0, 4, 8]))  # beam 0 of each sentence
    assert torch.equal(back.a, state.a)
    assert torch.equal(back.layers[0].x, state.layers[0].x)
    assert torch.equal(back.pair.left, state.pair.left)
    assert torch.equal(back.table["k"], state.table["k"])
    # Non-tensors are carried over untouched, containers keep their types.
    assert (back.count, back.layers[1], back.pair.right, back.layers[0].tag) == (7, None, 5, "leaf")
    assert isinstance(back.pair, Pair) and isinstance(back.layers, list)


def test_gather_reorders_repeats_and_drops() -> None:
    state = make(4)
    picked = gather_beams(state, torch.tensor([3, 3, 0]))
    assert picked.a.tolist() == [3, 3, 0]
    assert picked.layers[0].x.tolist() == [[3, -3], [3, -3], [0, 0]]
    assert picked.table["k"].tolist() == [30, 30, 0]
    assert state.a.tolist() == [0, 1, 2, 3]  # the input is not modified


@dataclass
class Shared:
    rows: torch.Tensor  # (R,)
    memory: list = per_sentence()  # [(B, 2)], one row per sentence


def test_per_sentence_fields_are_not_copied_per_beam() -> None:
    state = Shared(torch.arange(3), [torch.tensor([[0, 0], [1, 1], [2, 2]])])
    wide = expand_to_beams(state, 2)
    assert wide.rows.tolist() == [0, 0, 1, 1, 2, 2]
    assert wide.memory[0] is state.memory[0]  # (B, 2), shared by the beams
    # Sentence 1 dies; sentence 0 continues beam 1 twice, sentence 2 keeps its order.
    picked = gather_beams(wide, torch.tensor([1, 1, 4, 5]), beam=2)
    assert picked.rows.tolist() == [0, 0, 2, 2]
    assert picked.memory[0].tolist() == [[0, 0], [2, 2]]


@dataclass
class Picked:
    cache: torch.Tensor = picked_by("rows")  # (R0, 2) as stored
    rows: torch.Tensor | None = None  # (R,) the stored row each row reads


def test_picked_by_fields_are_not_copied_only_their_rows() -> None:
    state = Picked(torch.tensor([[0, 0], [1, 1], [2, 2]]), torch.arange(3))
    wide = expand_to_beams(state, 2)
    assert wide.cache is state.cache and wide.rows.tolist() == [0, 0, 1, 1, 2, 2]
    picked = gather_beams(wide, torch.tensor([1, 1, 4, 5]), beam=2)  # composed lazily: rows of rows
    assert picked.cache is state.cache and picked.rows.tolist() == [0, 0, 2, 2]
    assert picked.cache[picked.rows].tolist() == gather_beams(expand_to_beams(state.cache, 2), torch.tensor([1, 1, 4, 5])).tolist()
    plain = gather_beams(Picked(state.cache), torch.tensor([2, 0]))  # rows None: mapped as any field
    assert plain.cache.tolist() == [[2, 2], [0, 0]] and plain.rows is None


def test_map_state_reaches_every_tensor() -> None:
    seen = []
    map_state(make(2), lambda x: seen.append(tuple(x.shape)) or x)
    assert sorted(seen) == [(2,), (2,), (2, 1, 3), (2, 2)]


def test_gru_state_round_trip() -> None:
    model = ToyGRU()
    src, keep = random_batch(3, seed=0)
    state = model.init_state(model.encode(src, keep), keep)
    check_batch_first(state, 3)
    back = gather_beams(expand_to_beams(state, 2), torch.tensor([1, 3, 5]))  # beam 1 of each
    assert torch.equal(back.hidden, state.hidden) and torch.equal(back.memory, state.memory)
    assert torch.equal(back.nested[0].history[0], state.nested[0].history[0])
    assert back.nested[1:] == (None, 0)


def test_check_batch_first_names_the_bad_tensor() -> None:
    with pytest.raises(ValueError, match=r"shape \(\) does not have the batch \(2\)"):
        check_batch_first({"ok": torch.zeros(2, 3), "bad": torch.tensor(1.0)}, 2)


def test_beam_state_start_and_extend() -> None:
    state = BeamState.start(torch.tensor([5, 9]), beam=2)
    assert state.sentence.tolist() == [0, 0, 1, 1]
    assert state.max_len.tolist() == [5, 5, 9, 9]
    assert state.log_prob.tolist() == [0.0, float("-inf"), 0.0, float("-inf")]  # only beam 0 is live
    state = state.extend(torch.tensor([4, 5, 6, 7]), torch.tensor([-1.0, -2.0, -3.0, -4.0]), torch.eye(4))
    state = gather_beams(state, torch.tensor([1, 1, 2, 3]))  # beam 1 continues twice, beam 0 dies
    state = state.extend(torch.tensor([8, 9, 8, 9]), torch.zeros(4), torch.eye(4))
    assert state.tokens.tolist() == [[5, 8], [5, 9], [6, 8], [7, 9]]
    assert state.attention.shape == (4, 2, 4)
    assert state.attention[:, 0].argmax(-1).tolist() == [1, 1, 2, 3]  # history followed its beam
