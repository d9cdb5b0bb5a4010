"""Data-parallel training: torchrun with 2 CPU ranks (gloo) equals one process that accumulates both
ranks' batches, both ranks end with identical weights, and the run resumes in one process."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import yaml
from safetensors.torch import load_file

from attnkit.data.batching import TokenBatcher
from attnkit.errors import ConfigError
from attnkit.families import family_of, load_config
from attnkit.train.distributed import World, resume_position, world_from_env
from attnkit.train.loop import train

# dropout 0: the two runs draw random numbers differently. accum 2 on each of 2 ranks = accum 4 in
# one process, so the test covers sharding, no_sync on micro-batches and the loss normalisation.
TREE = {
    "data": {"corpus": "synthetic", "tokenizer": "word",
             "synthetic": {"task": "reverse", "vocab_size": 10, "min_len": 3, "max_len": 8, "train_size": 400, "valid_size": 10}},
    "model": {"kind": "transformer", "layers": 1, "d_model": 16, "n_heads": 2, "d_ff": 32, "dropout": 0.0},
    "train": {"seed": 3, "threads": 1, "max_tokens": 64, "accum": 2, "max_steps": 4, "eval_every": 4, "eval_decode": False,
              "log_every": 1, "schedule": {"kind": "constant", "lr": 0.003}},
}  # fmt: skip
STEPS = TREE["train"]["max_steps"]

# Runs the real CLI under torchrun and then dumps this rank's in-memory weights.
WORKER = """\
import os, sys
from safetensors.torch import save_file
from attnkit.cli import main
from attnkit.train import distributed

models = []
wrap = distributed.Replica.__init__
def capture(self, model, world):
    wrap(self, model, world)
    models.append(model)
distributed.Replica.__init__ = capture
code = main(sys.argv[1:])
weights = {k: v.detach().clone() for k, v in models[-1].state_dict().items()}
save_file(weights, os.path.join(os.environ["DUMP_DIR"], f"rank{os.environ['RANK']}.safetensors"))
sys.exit(code)
"""


def test_world_from_env() -> None:
    assert world_from_env({}) == World(rank=0, local_rank=0, size=1)
    world = world_from_env({"WORLD_SIZE": "4", "RANK": "3", "LOCAL_RANK": "1"})
    assert (world.rank, world.local_rank, world.size, world.is_main) == (3, 1, 4, False)
    assert world.device(torch.device("cuda")) == torch.device("cuda", 1)
    assert world.device(torch.device("cpu")) == torch.device("cpu")
    with pytest.raises(ConfigError, match="RANK=4 does not fit WORLD_SIZE=4"):
        world_from_env({"WORLD_SIZE": "4", "RANK": "4"})


def test_a_world_of_one_needs_no_process_group() -> None:
    world = World()
    assert world.sum([1.0, 2.5], torch.device("cpu")) == [1.0, 2.5]
    assert world.broadcast({"a": 1}) == {"a": 1}
    world.barrier()


def test_resume_position_keeps_the_share_of_the_epoch() -> None:
    assert resume_position(10, saved_world_size=1, world_size=2) == 5  # 10 batches consumed in all
    assert resume_position(5, saved_world_size=2, world_size=1) == 10
    assert resume_position(7, saved_world_size=3, world_size=2) == 10
    assert resume_position(7, saved_world_size=2, world_size=2) == 7


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.slow
def test_two_ranks_equal_one_process_with_both_batches(tmp_path: Path) -> None:
    config = tmp_path / "tiny.yaml"
    config.write_text(yaml.safe_dump(TREE))
    run = load_config(config)
    # Precondition: an even number of batches, so 1 and 2 ranks cut the epoch into the same batches.
    lengths = family_of(run.model.kind).task(run, tmp_path / "probe", None).train_lengths
    assert len(TokenBatcher(*lengths, max_tokens=64, shuffle=True, seed=3).epoch(0)) % 2 == 0

    (tmp_path / "worker.py").write_text(WORKER)
    out = tmp_path / "ddp"
    cmd = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2", "--master_addr", "127.0.0.1",
           "--master_port", str(_free_port()), str(tmp_path / "worker.py"), "train", str(config), "--out", str(out)]  # fmt: skip
    env = {**os.environ, "OMP_NUM_THREADS": "1", "DUMP_DIR": str(tmp_path)}
    result = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.count("trained 4 steps") == 1, result.stdout  # rank 0 reports, rank 1 is quiet

    rank0, rank1 = load_file(str(tmp_path / "rank0.safetensors")), load_file(str(tmp_path / "rank1.safetensors"))
    for name in rank0:
        assert torch.equal(rank0[name], rank1[name]), name
    records = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in records if r["kind"] == "train"] == list(range(1, STEPS + 1))  # written once, by rank 0

    single = train(load_config(config, ["train.accum=4"]), tmp_path / "single")
    assert single.step == STEPS
    saved = load_file(str(out / "checkpoints" / f"step_{STEPS:08d}" / "model.safetensors"))
    reference = load_file(str(tmp_path / "single" / "checkpoints" / f"step_{STEPS:08d}" / "model.safetensors"))
    assert saved.keys() == reference.keys()
    for name in saved:
        assert torch.equal(saved[name], rank0[name]), name
        # A key bias adds the same amount to all of a query's scores, which softmax cancels: its true
        # gradient is 0, and Adam scales the rounding noise left in it up to lr-sized steps. (Measured:
        # up to 3e-3 on k_proj.bias, at most 5e-8 on every other tensor.)
        if not name.endswith("k_proj.bias"):
            torch.testing.assert_close(saved[name], reference[name], rtol=0, atol=1e-6)
    # The epoch position counts each rank's batches: 2 ranks x 4 updates x 2 micro-batches = 16 in all.
    state = json.loads((out / "checkpoints" / f"step_{STEPS:08d}" / "state.json").read_text())["train_state"]
    assert state["batch_in_epoch"] * 2 == single.batch_in_epoch == STEPS * 4 and state["world_size"] == 2

    # Resuming the 2-rank run in one process continues after the 16 batches both ranks consumed.
    resumed = train(load_config(config, ["train.max_steps=6"]), out, resume=True)
    assert (resumed.step, resumed.batch_in_epoch, resumed.world_size) == (6, 16 + 2 * 2, 1)
