"""int8 on every CPU (docs/deployment.md, int8): which GEMM CTranslate2 multiplies int8 with, what attnkit
chooses on a CPU without VNNI, the warning where int8 loses accuracy, and the deployment tests on an
imitated AVX2-only CPU (CT2_FORCE_CPU_ISA, ONEDNN_MAX_CPU_ISA, ATEN_CPU_CAPABILITY), whatever this CPU is."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from attnkit import precision
from attnkit.cli import main
from attnkit.families.translation.export import ctranslate2_model

AMD_AVX2 = "vendor_id\t: AuthenticAMD\nmodel name\t: AMD EPYC 7B12\nflags\t\t: fpu sse avx avx2 fma\n"
AMD_VNNI = "vendor_id\t: AuthenticAMD\nmodel name\t: AMD EPYC 9R14\nflags\t\t: fpu sse avx avx2 avx512f avx512_vnni\n"
INTEL_AVX2 = "vendor_id\t: GenuineIntel\nmodel name\t: Intel(R) Xeon(R) CPU E5-2686 v4\nflags\t\t: fpu sse avx avx2 fma\n"
ARM = "CPU implementer\t: 0x41\nFeatures\t: fp asimd\n"
AVX2_ONLY = {"CT2_FORCE_CPU_ISA": "AVX2", "ONEDNN_MAX_CPU_ISA": "AVX2", "ATEN_CPU_CAPABILITY": "avx2"}


@pytest.fixture
def cpu(monkeypatch):
    """`cpu(cpuinfo_text)`: attnkit reads that /proc/cpuinfo."""

    def use(text: str) -> None:
        fields = [line.split(":", 1) for line in text.splitlines()]
        values = {key.strip(): value.strip() for key, value in reversed(fields)}
        monkeypatch.setattr(precision, "_cpuinfo", lambda field: values.get(field, ""))

    return use


@pytest.mark.parametrize(
    "cpuinfo, environ, expected",
    [
        (AMD_VNNI, {}, ("oneDNN", True)),
        (AMD_AVX2, {}, ("oneDNN", False)),
        (AMD_AVX2, {"CT2_USE_MKL": "1"}, ("MKL", True)),
        (AMD_VNNI, {"ONEDNN_MAX_CPU_ISA": "AVX2"}, ("oneDNN", False)),
        (INTEL_AVX2, {}, ("MKL", True)),
        (INTEL_AVX2, {"CT2_USE_MKL": "0"}, ("oneDNN", False)),
        (ARM, {}, ("CTranslate2's default", True)),
    ],
)
def test_which_gemm_multiplies_int8(cpu, cpuinfo, environ, expected):
    cpu(cpuinfo)
    backend, accurate, why = ctranslate2_model.int8_gemm(environ)
    assert (backend, accurate) == expected
    assert ("saturate" in why) == (not accurate)


@pytest.mark.parametrize(
    "cpuinfo, environ, chosen",
    [(AMD_AVX2, {}, "1"), (AMD_VNNI, {"ONEDNN_MAX_CPU_ISA": "AVX2"}, "1"), (AMD_AVX2, {"CT2_USE_MKL": "0"}, "0"), (AMD_VNNI, {}, None), (ARM, {}, None)],
)
def test_attnkit_picks_mkl_only_where_onednn_would_saturate(cpu, cpuinfo, environ, chosen):
    """A user's CT2_USE_MKL wins; a CPU with VNNI, or not x86, keeps CTranslate2's default."""
    cpu(cpuinfo)
    ctranslate2_model.choose_gemm_backend(environ)
    assert environ.get("CT2_USE_MKL") == chosen


def test_export_int8_warns_where_it_loses_accuracy(cpu, monkeypatch, tiny_transformer_run, tmp_path, caplog):
    if importlib.util.find_spec("ctranslate2") is None:
        pytest.skip("the optional ctranslate2 package (pip install 'attnkit[export]')")
    cpu(AMD_AVX2)
    monkeypatch.setenv("CT2_USE_MKL", "0")
    monkeypatch.setattr(ctranslate2_model, "loaded_backend", lambda: "oneDNN")  # as ctranslate2 loads under that setting
    with caplog.at_level("WARNING", logger="attnkit"):
        assert main(["export", str(tiny_transformer_run), "--format", "ctranslate2", "--out", str(tmp_path / "fp32")]) == 0
        assert "BLEU" not in caplog.text  # float32: nothing to say
        assert main(["export", str(tiny_transformer_run), "--format", "ctranslate2", "--quantization", "int8", "--out", str(tmp_path / "int8")]) == 0
    assert "--quantization int8: on this CPU CTranslate2 multiplies int8 with oneDNN" in caplog.text
    assert ctranslate2_model.INT8_ONEDNN_MEASURED in caplog.text
    assert "unset CT2_USE_MKL to let attnkit use MKL" in caplog.text


@pytest.mark.slow
@pytest.mark.skipif(os.environ.get("ONEDNN_MAX_CPU_ISA") == "AVX2", reason="already on the imitated AVX2 path")
def test_deployment_on_an_avx2_only_cpu():
    """The int8 tests and CTranslate2's float32 decoding pass where CTranslate2, oneDNN and PyTorch are capped at AVX2,
    as on a CPU without AVX-512 or VNNI (the CPU where main's int8 test once failed: 25 of 60 outputs as float32's).
    One model (post-norm) is enough: the cap changes the kernels, not the model; ONNX Runtime is not capped."""
    if importlib.util.find_spec("ctranslate2") is None:
        pytest.skip("the optional ctranslate2 package (pip install 'attnkit[export]')")
    test = Path(__file__).with_name("test_deployment.py")
    env = {k: v for k, v in os.environ.items() if k != "CT2_USE_MKL"} | AVX2_ONLY
    command = [sys.executable, "-m", "pytest", str(test), "-p", "no:cacheprovider", "-rs", "-k", "post and (int8 or ctranslate2_decodes)", "-o", "addopts="]
    result = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600, check=False)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
    assert "SKIPPED" not in result.stdout and " passed" in result.stdout, result.stdout[-2000:]


IMPORTED_FIRST = """
import json, logging, os, sys
import ctranslate2  # before attnkit: its GEMM backend is fixed now, from the environment as it is
os.environ.pop("CT2_USE_MKL", None)  # as in a process that never set it (argv[1] == "1": it was set to 0 at import)
from attnkit.families.translation.export import ctranslate2_model
logging.basicConfig(level=logging.WARNING, format="%(message)s")
ctranslate2_model.warn_int8("int8")
backend, accurate, why = ctranslate2_model.int8_here()
types = sorted(ctranslate2.get_supported_compute_types("cpu"))
print(json.dumps({"backend": backend, "accurate": accurate, "types": types}))
"""


@pytest.mark.parametrize("forced_onednn", [False, True], ids=["as-imported", "onednn-at-import"])
def test_ctranslate2_imported_before_attnkit_is_reported_as_it_runs(forced_onednn):
    """A program that imports ctranslate2 before attnkit keeps the backend CTranslate2 picked then, whatever attnkit
    would choose: attnkit reports that backend (an MKL build offers int16, oneDNN does not) and, where it is
    oneDNN without VNNI, int8 work says so in one line with the fix. `onednn-at-import` makes that case happen on
    every x86 CPU: CT2_USE_MKL=0 and oneDNN capped at AVX2 while ctranslate2 loads, the variable gone afterwards."""
    if importlib.util.find_spec("ctranslate2") is None:
        pytest.skip("the optional ctranslate2 package (pip install 'attnkit[export]')")
    if "avx2" not in precision.cpu_flags():
        pytest.skip("not an x86 CPU with AVX2: CTranslate2's int8 backends are not chosen by attnkit here")
    env = {k: v for k, v in os.environ.items() if k != "CT2_USE_MKL"}
    if forced_onednn:
        env |= AVX2_ONLY | {"CT2_USE_MKL": "0"}
    result = subprocess.run([sys.executable, "-c", IMPORTED_FIRST], env=env, capture_output=True, text=True, timeout=120, check=False)
    assert result.returncode == 0, result.stderr[-2000:]
    report = json.loads(result.stdout.splitlines()[-1])
    assert report["backend"] == ("MKL" if "int16" in report["types"] else "oneDNN")
    warnings = [line for line in result.stderr.splitlines() if "multiplies int8" in line]
    assert len(warnings) == (0 if report["accurate"] else 1), result.stderr
    if forced_onednn:
        assert (report["backend"], report["accurate"]) == ("oneDNN", False)
        assert "ctranslate2 was imported before attnkit could choose MKL: set CT2_USE_MKL=1 before importing ctranslate2" in warnings[0]
