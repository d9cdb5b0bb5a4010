"""A full disk at every kind of write, through the CLI: one line naming the file and the cause,
exit status 2, no traceback, no temporary file, the previous checkpoint (or output file) intact, and
for training the command that resumes the run, which then works. The faults are injected at the
write (`full_disk`, tests/conftest.py); the last test fills a real tmpfs where it can mount one."""

from __future__ import annotations

import json
import os
import subprocess
from fnmatch import fnmatchcase
from pathlib import Path

import pytest
from test_faults import CONFIG, _assert_last_checkpoint_loads

from attnkit.artifacts.checkpoint import checkpoint_dirs
from attnkit.cli import main

FULL = "cannot write (No space left on device)"
STEPS = 12  # checkpoints at steps 5, 10 and 12; the faults hit the second one


def _error_line(capsys) -> str:
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.strip() and "%|" not in line]
    assert len(lines) == 1 and lines[0].startswith("attnkit: error: ") and "Traceback" not in err, err
    return lines[0]


def _temporaries(folder: Path) -> list[Path]:
    return [p for p in folder.rglob("*") if ".tmp" in p.name]


BPE = ["--set", "data.tokenizer=bpe", "--set", "data.vocab_size=17"]  # a SentencePiece model to write
# (kind, how the disk fills, the file the error names (under tmp_path), the checkpoints left: the
# last one loads, extra arguments)
TRAINING = [
    ("model.safetensors", lambda d: d.at_safetensors("model.safetensors", skip=1), "run/checkpoints/step_00000010/model.safetensors", [5], []),
    ("trainer.safetensors", lambda d: d.at_safetensors("trainer.safetensors", skip=1), "run/checkpoints/step_00000010/trainer.safetensors", [5], []),
    ("state.json", lambda d: d.at_fsync("/state.json", skip=1), "run/checkpoints/step_00000010", [5], []),
    ("best.json", lambda d: d.at_fsync(".best.json.", skip=1), "run/best.json", [5, 10], []),  # written after its checkpoint
    ("metrics.jsonl", lambda d: d.at_write("metrics.jsonl", skip=7), "run/metrics.jsonl", [5], []),  # at step 7
    ("config.yaml", lambda d: d.at_fsync(".config.yaml."), "run/config.yaml", [], []),
    ("tokenizer cache", lambda d: d.at_fsync("/.attnkit-cache/.spm-"), ".attnkit-cache/spm-bpe-17-*.model", [], BPE),
    ("tokenizer model", lambda d: d.at_fsync("/run/.spm-"), "run/spm-bpe-17-*.model", [], BPE),
]


@pytest.mark.parametrize("kind, fill, names, kept, extra", TRAINING, ids=[t[0] for t in TRAINING])
def test_training_on_a_full_disk(kind, fill, names, kept, extra, tmp_path, full_disk, monkeypatch, capsys):
    config, out = tmp_path / "toy.yaml", tmp_path / "run"
    config.write_text(CONFIG)
    argv = ["train", str(config), "--out", str(out), "--set", f"train.max_steps={STEPS}", *extra]
    fill(full_disk)
    capsys.readouterr()
    assert main(argv) == 2
    line = _error_line(capsys)
    how = f"resume with: attnkit train {' '.join(argv[1:])} --resume" if kept else f"start again with: attnkit train {' '.join(argv[1:])}"
    assert fnmatchcase(line, f"attnkit: error: {tmp_path / names}: {FULL}; once space is freed (or the disk is writable), {how}"), line
    assert full_disk.failed and not _temporaries(tmp_path)
    for record in (out / "metrics.jsonl").read_text().splitlines() if (out / "metrics.jsonl").exists() else []:
        json.loads(record)  # whole lines only
    assert [p.name for p in checkpoint_dirs(out)] == [f"step_{step:08d}" for step in kept]
    if kept:
        _assert_last_checkpoint_loads(out)

    monkeypatch.undo()  # space is freed
    assert main(argv + ["--resume"] if kept else argv) == 0
    assert checkpoint_dirs(out)[-1].name == f"step_{STEPS:08d}"
    steps = [json.loads(r)["step"] for r in (out / "metrics.jsonl").read_text().splitlines() if '"train"' in r]
    assert steps == list(range(1, STEPS + 1))


def _input(tmp: Path) -> str:
    (tmp / "in.txt").write_text("t1 t2 t3\n")
    return str(tmp / "in.txt")


# (command, argv from (tmp, run), the run fixture, the file that cannot be written)
COMMANDS = [
    ("translate --out", lambda t, r: ["translate", r, "--input", _input(t), "--out", str(t / "out.txt")], "tiny_transformer_run", "out.txt"),
    ("translate --attention", lambda t, r: ["translate", r, "--input", _input(t), "--attention", str(t / "a.jsonl")], "tiny_transformer_run", "a.jsonl"),
    ("report", lambda t, r: ["report", r, "t1 t2", "--out", str(t / "r.html")], "tiny_transformer_run", "r.html"),
    ("plot", lambda t, r: ["plot", r, "t1 t2", "--out", str(t / "plots")], "tiny_transformer_run", "plots/000-encoder-layer1-head1.png"),
    ("explain --out FILE.png", lambda t, r: ["explain", r, "t1 t2", "--out", str(t / "x.html"), "--out", str(t / "x.png")], "tiny_sase_run", "x.png"),
    ("embed", lambda t, r: ["embed", r, "--input", _input(t), "--out", str(t / "x.npy")], "tiny_sase_run", "x.npy"),
]


@pytest.mark.parametrize("command, argv, run, name", COMMANDS, ids=[c[0] for c in COMMANDS])
def test_outputs_on_a_full_disk(command, argv, run, name, tmp_path, full_disk, request, capsys):
    target = tmp_path / name
    target.parent.mkdir(exist_ok=True)
    target.write_bytes(b"old")
    full_disk.at_fsync(f"/.{target.name}.")
    capsys.readouterr()
    assert main(argv(tmp_path, str(request.getfixturevalue(run)))) == 2
    assert _error_line(capsys) == f"attnkit: error: {target}: {FULL}"
    assert target.read_bytes() == b"old" and not _temporaries(tmp_path)


def test_average_on_a_full_disk_leaves_no_run_folder(tmp_path, tiny_transformer_run, full_disk, capsys):
    out = tmp_path / "avg"
    full_disk.at_safetensors("model.safetensors")
    capsys.readouterr()
    assert main(["average", str(tiny_transformer_run), "--last", "1", "--out", str(out)]) == 2
    assert _error_line(capsys) == f"attnkit: error: {out}/checkpoints/step_00000001/model.safetensors: {FULL}"
    assert not out.exists()  # nothing half-written to trip over; the same command works later


@pytest.fixture
def small_disk(tmp_path):
    """A 2 MiB tmpfs at tmp_path/disk (skipped where mounting is not allowed)."""
    disk = tmp_path / "disk"
    disk.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(disk)], capture_output=True, text=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.strip() or mounted.returncode}")
    yield disk
    subprocess.run(["umount", "-l", str(disk)], check=True)


def _fill(disk: Path, leave: int) -> Path:
    """Fill `disk` up to `leave` bytes of free space with one file."""
    free = os.statvfs(disk).f_bavail * os.statvfs(disk).f_frsize
    filler = disk / "filler"
    filler.write_bytes(b"\0" * (free - leave))
    return filler


def test_training_on_a_really_full_disk(small_disk, tmp_path, capsys):
    """A real ENOSPC from safetensors (checkpoints of this model take 288 KB; 100 KB are left)."""
    config, out = tmp_path / "toy.yaml", small_disk / "run"
    config.write_text(CONFIG)
    argv = ["train", str(config), "--out", str(out)]
    assert main(argv + ["--set", "train.max_steps=5"]) == 0
    filler = _fill(small_disk, leave=100_000)
    capsys.readouterr()
    assert main(argv + ["--set", "train.max_steps=10", "--resume"]) == 2
    line = _error_line(capsys)
    assert f"{out}/checkpoints/step_00000010/" in line and FULL in line and line.endswith("--resume"), line
    assert [p.name for p in checkpoint_dirs(out)] == ["step_00000005"] and not _temporaries(out)
    _assert_last_checkpoint_loads(out)
    filler.unlink()
    assert main(argv + ["--set", "train.max_steps=10", "--resume"]) == 0
    assert checkpoint_dirs(out)[-1].name == "step_00000010"
