"""Checkpoints: atomic safetensors + JSON, safe loading, pruning and averaging."""

import json
import pickle

import pytest
import torch
from torch import nn

from attnkit.artifacts.checkpoint import (
    average_checkpoints,
    checkpoint_dirs,
    find_checkpoint,
    load_trainer,
    load_weights,
    prune,
    remove_leftovers,
    save_checkpoint,
    save_weights,
)
from attnkit.errors import CheckpointError


class Tied(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(5, 3)
        self.out = nn.Linear(3, 5, bias=False)
        self.out.weight = self.embed.weight  # shared tensor: stored once


def trained(seed=0):
    torch.manual_seed(seed)
    model = Tied()
    opt = torch.optim.Adam(model.parameters(), lr=0.1)
    model.out(model.embed(torch.tensor([1, 2]))).sum().backward()
    opt.step()
    return model, opt


def test_round_trip_restores_weights_optimizer_and_rng(tmp_path):
    model, opt = trained()
    rng = {"torch": torch.get_rng_state()}
    path = save_checkpoint(tmp_path, 7, model, state={"train_state": {"step": 7}}, optimizer=opt, rng=rng)
    assert path.name == "step_00000007" and {p.name for p in path.iterdir()} == {"model.safetensors", "trainer.safetensors", "state.json"}
    fresh, fresh_opt = Tied(), torch.optim.Adam(Tied().parameters(), lr=0.1)
    fresh_opt = torch.optim.Adam(fresh.parameters(), lr=0.1)
    load_weights(fresh, path)
    state, rng2 = load_trainer(path, fresh_opt)
    assert state["train_state"]["step"] == 7
    torch.testing.assert_close(fresh.embed.weight, model.embed.weight)
    assert fresh.out.weight is fresh.embed.weight
    torch.testing.assert_close(fresh_opt.state_dict()["state"][0]["exp_avg"], opt.state_dict()["state"][0]["exp_avg"])
    assert torch.equal(rng2["torch"], rng["torch"])


def test_no_temporary_folder_left_on_failure(tmp_path):
    model, opt = trained()

    class Boom(dict):
        def items(self):
            raise RuntimeError("disk full")

    with pytest.raises(RuntimeError):
        save_checkpoint(tmp_path, 1, model, state={}, optimizer=opt, rng=Boom(x=1))
    assert list((tmp_path / "checkpoints").iterdir()) == []


def test_remove_leftovers_deletes_what_a_killed_writer_left(tmp_path):
    # What SIGKILL can leave: a checkpoint folder being written, one being deleted by prune, and an
    # atomic write's temporary file (attnkit.io.atomic_path). Complete checkpoints and files stay.
    model, _ = trained()
    keep = save_checkpoint(tmp_path, 1, model, state={})
    (tmp_path / "checkpoints" / ".tmp-step_00000002-123").mkdir()
    (tmp_path / "checkpoints" / ".tmp-step_00000002-123" / "model.safetensors").write_bytes(b"half")
    (tmp_path / "checkpoints" / ".tmp-old-step_00000000-123").mkdir()
    (tmp_path / ".best.json.k2j4h5.tmp").write_text('{"checkpoint": "st')
    (tmp_path / "best.json").write_text("{}")
    removed = remove_leftovers(tmp_path)
    assert len(removed) == 3
    assert sorted(p.name for p in tmp_path.rglob("*")) == sorted(["best.json", "checkpoints", keep.name, *(p.name for p in keep.iterdir())])


def test_loading_refuses_pickles_truncation_and_other_models(tmp_path):
    model, _ = trained()
    path = save_checkpoint(tmp_path, 1, model, state={})
    weights = path / "model.safetensors"
    data = weights.read_bytes()
    weights.write_bytes(data[: len(data) // 2])
    with pytest.raises(CheckpointError, match="not a valid safetensors file"):
        load_weights(Tied(), path)

    class Evil:
        def __reduce__(self):
            return (exec, ("import pathlib; pathlib.Path('/tmp/attnkit-pwned').touch()",))

    weights.write_bytes(pickle.dumps(Evil()))
    with pytest.raises(CheckpointError, match="not a valid safetensors file"):
        load_weights(Tied(), path)
    import os

    assert not os.path.exists("/tmp/attnkit-pwned")
    save_checkpoint(tmp_path, 2, model, state={})
    with pytest.raises(CheckpointError, match="do not match the model"):
        load_weights(nn.Linear(3, 4), tmp_path / "checkpoints" / "step_00000002")


def test_find_prune_and_best(tmp_path):
    model, _ = trained()
    for step in (1, 2, 3, 4):
        save_checkpoint(tmp_path, step, model, state={})
    assert find_checkpoint(tmp_path, "last").name == "step_00000004"
    assert find_checkpoint(tmp_path, "2").name == "step_00000002"
    (tmp_path / "best.json").write_text(json.dumps({"checkpoint": "step_00000001"}))
    assert find_checkpoint(tmp_path, "best").name == "step_00000001"
    prune(tmp_path, keep_last=2, keep={"step_00000001"})
    assert [p.name for p in checkpoint_dirs(tmp_path)] == ["step_00000001", "step_00000003", "step_00000004"]
    with pytest.raises(CheckpointError, match="no checkpoint for step 9"):
        find_checkpoint(tmp_path, "9")
    with pytest.raises(CheckpointError, match="no such run folder"):
        find_checkpoint(tmp_path / "nope")


def test_average_is_the_mean_and_identity_on_copies(tmp_path):
    a, _ = trained(0)
    b, _ = trained(1)
    pa = save_checkpoint(tmp_path / "a", 1, a, state={})
    pb = save_checkpoint(tmp_path / "b", 1, b, state={})
    mean = average_checkpoints([pa, pb])
    torch.testing.assert_close(mean["embed.weight"], (a.embed.weight + b.embed.weight).detach() / 2)
    same = average_checkpoints([pa, pa, pa])
    assert torch.equal(same["embed.weight"], a.embed.weight.detach())
    out = save_weights(tmp_path / "avg", 1, mean, {"averaged_from": ["a", "b"]})
    model = Tied()
    load_weights(model, out)
    torch.testing.assert_close(model.embed.weight, mean["embed.weight"])
    save_checkpoint(tmp_path / "c", 1, nn.Linear(2, 2), state={})
    with pytest.raises(CheckpointError, match="different parameters"):
        average_checkpoints([pa, tmp_path / "c" / "checkpoints" / "step_00000001"])
