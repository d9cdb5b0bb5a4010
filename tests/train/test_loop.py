"""The training loop: exact resume, NaN handling, refusing to overwrite a run."""

import pytest
import torch
from safetensors.torch import load_file

from attnkit.cli import main
from attnkit.errors import CheckpointError, TrainingError
from attnkit.families import validate_run as validate
from attnkit.train.loop import train


def tiny(**train_overrides):
    tree = {
        "data": {"corpus": "synthetic", "tokenizer": "word",
                 "synthetic": {"task": "copy", "vocab_size": 8, "max_len": 6, "train_size": 300, "valid_size": 20}},
        "model": {"kind": "transformer", "layers": 1, "d_model": 16, "n_heads": 2, "d_ff": 32, "dropout": 0.2},
        "train": {"max_tokens": 128, "max_steps": 6, "eval_every": 3, "eval_decode": False, "log_every": 1,
                  "schedule": {"kind": "inverse_sqrt", "lr": 0.01, "warmup": 2}, **train_overrides},
    }  # fmt: skip
    return validate(tree, "test")


def weights(run_dir, step):
    return load_file(str(run_dir / "checkpoints" / f"step_{step:08d}" / "model.safetensors"))


@pytest.mark.slow
def test_resume_equals_uninterrupted(tmp_path):
    train(tiny(), tmp_path / "full")
    train(tiny(max_steps=3), tmp_path / "split")
    state = train(tiny(), tmp_path / "split", resume=True)
    assert state.step == 6
    a, b = weights(tmp_path / "full", 6), weights(tmp_path / "split", 6)
    assert a.keys() == b.keys()
    for name in a:
        assert torch.equal(a[name], b[name]), name


def test_accumulation_counts_updates_not_batches(tmp_path):
    state = train(tiny(accum=2, max_steps=2, eval_every=2), tmp_path / "run")
    assert state.step == 2 and state.batch_in_epoch == 4


def test_checkpoint_minutes_writes_checkpoints_between_validations(tmp_path):
    import json

    from attnkit.artifacts.checkpoint import checkpoint_dirs

    # A checkpoint after every update (0.6 ms of training each), validation only at the end.
    state = train(tiny(eval_every=1000, checkpoint_minutes=1e-5, keep_last=10), tmp_path / "run")
    dirs = checkpoint_dirs(tmp_path / "run")
    assert [d.name for d in dirs] == [f"step_{i:08d}" for i in range(1, 7)] and state.step == 6
    metrics = [json.loads((d / "state.json").read_text())["metrics"] for d in dirs]
    assert all(m == {} for m in metrics[:-1]) and "loss" in metrics[-1]  # validated only at the end


def test_eval_first_validates_once_early_then_every_eval_every(tmp_path):
    import json

    train(tiny(max_steps=7, eval_every=3, eval_first=2, keep_last=10), tmp_path / "run")
    lines = [json.loads(line) for line in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    assert [m["step"] for m in lines if m["kind"] == "valid"] == [2, 3, 6, 7]  # 7: the end of the run


def test_refuses_to_overwrite_a_trained_run(tmp_path):
    train(tiny(max_steps=3), tmp_path / "run")
    with pytest.raises(CheckpointError, match="already holds checkpoints; pass --resume"):
        train(tiny(), tmp_path / "run")


def test_nan_loss_steps_are_skipped_then_stop(tmp_path, monkeypatch):
    import attnkit.families.translation.task as translation

    real = translation.batch_loss

    def poisoned(model, batch, epsilon):
        loss, nll = real(model, batch, epsilon)
        return loss * float("nan"), nll

    monkeypatch.setattr(translation, "batch_loss", poisoned)
    with pytest.raises(TrainingError, match=r"loss was NaN/inf for 3 steps in a row \(step 1\)"):
        train(tiny(max_bad_steps=3), tmp_path / "run")


@pytest.mark.slow
def test_sigterm_finishes_the_update_checkpoints_and_resumes(tmp_path, capsys):
    # A real process: SIGTERM once training runs; it must exit 0 with a resume hint, leave a
    # loadable checkpoint and no temporary files, and `--resume` (the CLI in this process) must continue from that step.
    import signal
    import subprocess
    import sys
    import time

    out = tmp_path / "run"
    small = ("data.synthetic.train_size=2000", "model.d_model=32", "model.d_ff=64", "train.log_every=1", "train.eval_every=100000")
    cmd = ["train", "toy-reverse", "--out", str(out), *(a for v in small for a in ("--set", v))]
    proc = subprocess.Popen(
        [sys.executable, "-m", "attnkit", *cmd, "--set", "train.max_steps=100000"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    deadline = time.time() + 60
    while time.time() < deadline and not (out / "metrics.jsonl").exists():  # written at the first update
        time.sleep(0.1)
    time.sleep(0.5)  # some more updates
    proc.send_signal(signal.SIGTERM)
    stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 0, stderr
    assert "stopped by SIGTERM at step" in stdout and "--resume" in stdout
    assert "Traceback" not in stderr
    [checkpoint] = (out / "checkpoints").iterdir()
    step = int(checkpoint.name.removeprefix("step_"))
    assert step > 0 and f"at step {step};" in stdout
    assert not [p for p in out.rglob("*") if ".tmp" in p.name]
    assert main([*cmd, "--set", f"train.max_steps={step + 3}", "--resume"]) == 0
    assert f"trained {step + 3} steps" in capsys.readouterr().out


@pytest.mark.parametrize("amsgrad", [False, True])
def test_amsgrad_keeps_the_running_maximum_of_the_second_moment(tmp_path, amsgrad):
    train(tiny(amsgrad=amsgrad, max_steps=2, eval_every=2), tmp_path / "run")
    saved = load_file(str(tmp_path / "run" / "checkpoints" / "step_00000002" / "trainer.safetensors"))
    assert any("max_exp_avg_sq" in name for name in saved) == amsgrad  # torch.optim.Adam's AMSGrad state
