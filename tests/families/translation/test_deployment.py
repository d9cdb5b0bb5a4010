"""Deployment: a tiny trained Transformer exported to CTranslate2 and ONNX decodes as attnkit does (an ONNX export
needs neither ctranslate2 nor onnxruntime); int8 decoding; runs that cannot be exported are one error line (docs/deployment.md)."""

from __future__ import annotations

import functools
import importlib.util
import random
from pathlib import Path

import pytest
import torch

from attnkit.artifacts.runs import load_run
from attnkit.cli import main
from attnkit.errors import MissingExtra
from attnkit.families import FAMILIES
from attnkit.families.translation.export import ctranslate2_model, onnx_runner
from attnkit.families.translation.export.bundle import read_bundle
from attnkit.families.translation.translate import translate

FAMILY = FAMILIES["translation"]


@pytest.fixture(scope="module", params=["post", "pre"])
def trained(request, tmp_path_factory, tiny_transformer_maker, train_to_reverse) -> Path:
    return train_to_reverse(tiny_transformer_maker(tmp_path_factory.mktemp("deploy") / request.param, norm=request.param))


def _lines() -> list[str]:
    rng = random.Random(1)
    return [" ".join(f"t{rng.randrange(10)}" for _ in range(rng.randint(1, 7))) for _ in range(60)]


@functools.cache
def _attnkit(run: Path, beam: int) -> list[str]:
    loaded = load_run(run, FAMILY)
    return [nbest[0].text for nbest in translate(loaded.model, loaded.vocabs, _lines(), loaded.run.decode.with_overrides(beam=beam))]


def _export(run: Path, out: Path, fmt: str, *extra: str) -> Path:
    assert main(["export", str(run), "--format", fmt, "--out", str(out), *extra]) == 0
    return out


def _needs_ctranslate2() -> None:
    """Skip without ctranslate2; import it as attnkit does (its GEMM backend chosen first, as it reads it on import)."""
    if importlib.util.find_spec("ctranslate2") is None:
        pytest.skip("the optional ctranslate2 package (pip install 'attnkit[export]')")
    ctranslate2_model.ctranslate2()


def test_ctranslate2_decodes_as_attnkit(trained, tmp_path):
    _needs_ctranslate2()
    bundle = read_bundle(_export(trained, tmp_path / "ct2", "ctranslate2"), "ctranslate2")
    translator = ctranslate2_model.load(bundle, threads=1)
    assert _attnkit(trained, 1)[:3] != ["", "", ""]  # the model learnt something
    for beam in (1, 3):
        decode = bundle.decode.with_overrides(beam=beam)
        assert ctranslate2_model.translate(bundle, translator, _lines(), decode) == _attnkit(trained, beam)


def test_ctranslate2_searches_a_batch_per_worker_with_the_same_results(trained, tmp_path):
    """`search` queues every batch at once: two workers (inter_threads) give what one gives, batch for batch."""
    _needs_ctranslate2()
    bundle = read_bundle(_export(trained, tmp_path / "ct2", "ctranslate2"), "ctranslate2")
    one, two = ctranslate2_model.load(bundle, threads=1, batches=1), ctranslate2_model.load(bundle, threads=1, batches=2)
    assert two.num_translators == 2
    tokens = bundle.source_tokens(_lines(), "input")
    for beam in (1, 3):
        decode = bundle.decode.with_overrides(beam=beam, batch_size=3)  # several batches, in flight together
        done: list[int] = []
        ranked = ctranslate2_model.search(two, tokens, decode, progress=done.append)
        assert ranked == ctranslate2_model.search(one, tokens, decode)
        assert sum(done) == len(tokens)


def test_ctranslate2_int8_export_loads_and_translates(trained, tmp_path):
    """int8 keeps float32's output where CTranslate2's int8 GEMM sums in 32 bits (VNNI, or MKL, which attnkit picks on
    CPUs without VNNI): 60 of 60 (VNNI) and 53 of 60 (AVX2, MKL) measured on this toy; oneDNN without VNNI, 16 of 60."""
    _needs_ctranslate2()
    backend, accurate, why = ctranslate2_model.int8_here()
    if not accurate:
        pytest.skip(f"CTranslate2's int8 GEMM here is {backend} ({why}); test_int8_isa.py checks what attnkit says of it")
    bundle = read_bundle(_export(trained, tmp_path / "ct2-int8", "ctranslate2", "--quantization", "int8"), "ctranslate2")
    assert bundle.info["engine"]["quantization"] == "int8"
    out = ctranslate2_model.translate(bundle, ctranslate2_model.load(bundle, threads=1), _lines(), bundle.decode)
    same = sum(a == b for a, b in zip(out, _attnkit(trained, bundle.decode.beam)))
    print(f"int8 ({backend}, {why}): {same} of {len(out)} outputs as float32's")
    assert same >= 0.8 * len(out)


@pytest.mark.slow
def test_onnx_decodes_as_attnkit(trained, tmp_path, block, monkeypatch):
    """Exported with ctranslate2 and onnxruntime unimportable: an ONNX export needs neither, and only loading it for
    decoding asks for onnxruntime, in one error naming the extra. Then onnxruntime decodes it as attnkit does."""
    pytest.importorskip("onnxscript", reason="the optional onnx and onnxscript packages (pip install 'attnkit[export]')")
    pytest.importorskip("onnxruntime", reason="the optional onnxruntime package (pip install 'attnkit[export]')")
    block("ctranslate2", "onnxruntime")
    bundle = read_bundle(_export(trained, tmp_path / "onnx", "onnx"), "onnx")
    with pytest.raises(MissingExtra, match=r"needs onnxruntime, which is not installed: pip install 'attnkit\[export\]'"):
        onnx_runner.OnnxTransformer(bundle, threads=1)
    monkeypatch.undo()  # ctranslate2 and onnxruntime importable again
    model = onnx_runner.OnnxTransformer(bundle, threads=1)
    for beam in (1, 3):
        assert onnx_runner.translate(bundle, model, _lines(), bundle.decode.with_overrides(beam=beam)) == _attnkit(trained, beam)


def test_translate_int8(trained, tmp_path, capsys):
    loaded = load_run(trained, FAMILY, dtype=torch.qint8)
    for linear in (loaded.model.decoder_layers[0].ffn.w_1, loaded.model.decoder_layers[0].self_attn.k_proj, loaded.model.output):
        assert type(linear).__module__.startswith("torch.ao.nn.quantized.dynamic")  # the tied output projection too
    src = tmp_path / "src.txt"
    src.write_text("".join(line + "\n" for line in _lines()))
    capsys.readouterr()
    assert main(["translate", str(trained), "--input", str(src), "--dtype", "int8", "--beam", "3"]) == 0
    out = capsys.readouterr().out.splitlines()
    same = sum(a == b for a, b in zip(out, _attnkit(trained, 3)))
    assert len(out) == len(_lines()) and same >= 0.8 * len(out)


@pytest.mark.parametrize("fmt", ["ctranslate2", "onnx"])
def test_rnn_export_is_one_error_line(tiny_rnn_run, tmp_path, capsys, fmt):
    assert main(["export", str(tiny_rnn_run), "--format", fmt, "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert "export is not supported for this model (RNNSeq2Seq)" in err and err.count("\n") == 1
    assert not (tmp_path / "out").exists()


def test_int8_rnn_and_classifier_are_refused(tiny_rnn_run, tiny_sase_run, tmp_path, capsys):
    src = tmp_path / "src.txt"
    src.write_text("t1 t2\n")
    assert main(["translate", str(tiny_rnn_run), "--input", str(src), "--dtype", "int8"]) == 2
    assert "int8 decoding is not supported for this model (RNNSeq2Seq)" in capsys.readouterr().err
    assert main(["export", str(tiny_sase_run), "--format", "onnx", "--out", str(tmp_path / "out")]) == 2
    assert "this command needs a translation run" in capsys.readouterr().err


def test_export_never_replaces_a_folder_it_did_not_write(tiny_transformer_run, tmp_path, capsys):
    out = tmp_path / "mine"
    out.mkdir()
    (out / "notes.txt").write_text("keep me\n")
    assert main(["export", str(tiny_transformer_run), "--format", "ctranslate2", "--out", str(out)]) == 2
    assert "is not an attnkit export folder" in capsys.readouterr().err
    assert (out / "notes.txt").read_text() == "keep me\n"
