"""Bad input to `attnkit attention`: one line each, naming the source and what is wrong."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from hf_tiny import TEXT

from attnkit.cli import main
from attnkit.errors import AttnkitError
from attnkit.sources import AttentionOptions, export_attention

SRC = Path(__file__).resolve().parents[2] / "src"


def _error(capsys, *argv: str) -> str:
    assert main(["attention", *argv]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1, lines
    return lines[0]


def _copy(hf_folder, name: str, tmp_path: Path) -> Path:
    return Path(shutil.copytree(hf_folder(name), tmp_path / name))


def test_no_such_folder(capsys, tmp_path):
    line = _error(capsys, str(tmp_path / "nothing-here"), "text", "--out", str(tmp_path / "a.npz"))
    assert "nothing-here: no such folder" in line


def hub_env(home: Path, **settings: str) -> dict[str, str]:
    """This environment with huggingface_hub's cache in `home` alone: the machine's own cache, offline and
    endpoint settings dropped (a machine may point HF_HUB_CACHE elsewhere, which wins over HF_HOME)."""
    own = ("HF_", "HUGGINGFACE_", "TRANSFORMERS_")
    env = {k: v for k, v in os.environ.items() if not k.startswith(own)}
    return {**env, "HF_HOME": str(home), "PYTHONPATH": str(SRC), "OMP_NUM_THREADS": "1", **settings}


def _attention(tmp_path: Path, env: dict[str, str], *argv: str) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "attnkit", "attention", *argv, "--out", str(tmp_path / "a.npz")]
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300, cwd=tmp_path)


def cache_snapshot(home: Path, repo_id: str, folder: Path, refs: bool = True) -> Path:
    """`folder` as huggingface_hub caches a snapshot of `repo_id`: hub/models--OWNER--NAME/snapshots/REV, refs/main -> REV."""
    repo = home / "hub" / f"models--{repo_id.replace('/', '--')}"
    shutil.copytree(folder, repo / "snapshots" / ("0" * 40))
    if refs:
        (repo / "refs").mkdir()
        (repo / "refs" / "main").write_text("0" * 40)
    return repo


@pytest.mark.slow
@pytest.mark.parametrize("variable", ["HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"])
def test_hub_id_while_offline_names_the_id(tmp_path, variable):
    done = _attention(tmp_path, hub_env(tmp_path / "hf-home", **{variable: "1"}), "someone/tiny-bert", "text")
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2 and len(lines) == 1, done.stderr
    assert "someone/tiny-bert" in lines[0] and "offline" in lines[0]


def test_unknown_architecture(capsys, hf_folder, tmp_path):
    folder = _copy(hf_folder, "bert", tmp_path)
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**config, "model_type": "no-such-model"}))
    line = _error(capsys, str(folder), TEXT, "--out", str(tmp_path / "a.npz"))
    assert "unknown architecture" in line and "no-such-model" in line


def test_unknown_architecture_class(capsys, hf_folder, tmp_path):
    folder = _copy(hf_folder, "bert", tmp_path)
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**config, "architectures": ["BertForTimeTravel"]}))
    assert "unknown architecture BertForTimeTravel" in _error(capsys, str(folder), TEXT, "--out", str(tmp_path / "a.npz"))


def test_remote_code_is_refused(capsys, hf_folder, tmp_path):
    folder = _copy(hf_folder, "bert", tmp_path)
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**config, "auto_map": {"AutoModel": "modeling_evil.EvilModel"}}))
    line = _error(capsys, str(folder), TEXT, "--out", str(tmp_path / "a.npz"))
    assert "needs its own code" in line and "trust_remote_code" in line


def test_pickled_weights_only_are_refused(capsys, hf_folder, tmp_path):
    from safetensors.torch import load_file

    folder = _copy(hf_folder, "bert", tmp_path)
    torch.save(load_file(folder / "model.safetensors"), folder / "pytorch_model.bin")
    (folder / "model.safetensors").unlink()
    line = _error(capsys, str(folder), TEXT, "--out", str(tmp_path / "a.npz"))
    assert "only pickled weights (pytorch_model.bin)" in line and "safetensors" in line


def test_text_longer_than_the_positions(capsys, hf_folder, tmp_path):
    long = " ".join(["the dog sat"] * 20)  # 60 words + [CLS] [SEP]; the model has 32 positions
    line = _error(capsys, str(hf_folder("bert")), long, "--out", str(tmp_path / "a.npz"))
    assert "the text is 62 tokens, the model takes at most 32 (--truncate cuts it)" in line
    assert not (tmp_path / "a.npz").exists()
    assert main(["attention", str(hf_folder("bert")), long, "--out", str(tmp_path / "a.npz"), "--truncate"]) == 0
    z = np.load(tmp_path / "a.npz")
    assert z["encoder/layer1"].shape == (4, 32, 32) and z["tokens"][0] == "[CLS]" and z["tokens"][-1] == "[SEP]"


def test_options_that_do_not_fit_the_model(hf_folder, image_file, tmp_path):
    with pytest.raises(AttnkitError, match="--target is for encoder-decoder models"):
        export_attention(str(hf_folder("bert")), TEXT, tmp_path / "a.npz", AttentionOptions(target="x"))
    with pytest.raises(AttnkitError, match="a vision model reads an image"):
        export_attention(str(hf_folder("vit")), None, tmp_path / "a.npz", AttentionOptions())
    with pytest.raises(AttnkitError, match="no classification or language-model head"):
        export_attention(str(hf_folder("roberta")), TEXT, tmp_path / "a.npz", AttentionOptions(attribute=("ixg",)))
    with pytest.raises(AttnkitError, match="must be a .npz file"):
        export_attention(str(hf_folder("bert")), TEXT, tmp_path / "a.txt", AttentionOptions())
    assert not list(tmp_path.iterdir())


def test_missing_transformers_says_what_to_install(monkeypatch, tmp_path, hf_folder):
    monkeypatch.setitem(sys.modules, "transformers", None)  # import transformers -> ImportError
    with pytest.raises(AttnkitError, match=r"^Hugging Face models in the explorer needs transformers, which is not installed: pip install 'attnkit\[hf\]'$"):
        export_attention(str(hf_folder("bert")), TEXT, tmp_path / "a.npz", AttentionOptions())


@pytest.mark.slow
def test_a_cached_hub_id_opens_offline(hf_folder, tmp_path):
    """A hub id in huggingface_hub's cache (a fake one in tmp_path) opens with HF_HUB_OFFLINE=1, as the folder does."""
    cache_snapshot(tmp_path / "hf-home", "someone/tiny-bert", hf_folder("bert"))
    done = _attention(tmp_path, hub_env(tmp_path / "hf-home", HF_HUB_OFFLINE="1"), "someone/tiny-bert", TEXT)
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    z = np.load(tmp_path / "a.npz")
    assert z["encoder/layer2"].shape == (4, 11, 11)
    assert main(["attention", str(hf_folder("bert")), TEXT, "--out", str(tmp_path / "folder.npz")]) == 0
    np.testing.assert_array_equal(z["encoder/layer2"], np.load(tmp_path / "folder.npz")["encoder/layer2"])


def test_a_cached_snapshot_without_its_ref_is_not_the_id(hf_folder, tmp_path):
    """The cache names a snapshot through refs/main; without it the id is not in the cache."""
    cache_snapshot(tmp_path / "hf-home", "someone/tiny-bert", hf_folder("bert"), refs=False)
    done = _attention(tmp_path, hub_env(tmp_path / "hf-home", HF_HUB_OFFLINE="1"), "someone/tiny-bert", TEXT)
    assert done.returncode == 2 and "someone/tiny-bert: no such folder, and the hub id is not in the Hugging Face cache" in done.stderr


def test_cache_lookup_in_process(hf_folder, tmp_path, monkeypatch):
    """`artifacts.hf.cached` finds the snapshot of the cache huggingface_hub reads (HF_HUB_CACHE here), and nothing for another id."""
    hub = pytest.importorskip("huggingface_hub")
    from attnkit.artifacts.hf import cached

    cache_snapshot(tmp_path, "someone/tiny-bert", hf_folder("bert"))
    monkeypatch.setattr(hub.constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    assert cached(hub, "someone/tiny-bert") == tmp_path / "hub" / "models--someone--tiny-bert" / "snapshots" / ("0" * 40)
    assert cached(hub, "someone/other") is None
