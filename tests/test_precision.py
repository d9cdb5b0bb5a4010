"""`train.precision: auto`: bf16 only where the hardware computes it natively; `attnkit doctor`."""

import pytest
import torch

from attnkit import precision
from attnkit.cli import main


@pytest.fixture(autouse=True)
def fresh_cache(monkeypatch):
    monkeypatch.delenv("ONEDNN_MAX_CPU_ISA", raising=False)
    monkeypatch.delenv("DNNL_MAX_CPU_ISA", raising=False)
    precision.resolve.cache_clear()
    precision._cpuinfo.cache_clear()
    yield
    precision.resolve.cache_clear()
    precision._cpuinfo.cache_clear()


@pytest.mark.parametrize("native, expected", [(True, "bf16"), (False, "fp32")])
def test_auto_follows_the_hardware(monkeypatch, caplog, native, expected):
    monkeypatch.setattr(precision, "native_bf16", lambda device: (native, "test CPU"))
    with caplog.at_level("INFO", logger="attnkit"):
        assert precision.resolve("auto", torch.device("cpu")) == expected
    assert f"precision auto: {expected} (test CPU)" in caplog.text


def test_explicit_precision_is_kept(monkeypatch):
    monkeypatch.setattr(precision, "native_bf16", lambda device: (False, "test CPU"))
    assert precision.resolve("bf16", torch.device("cpu")) == "bf16"
    assert precision.resolve("fp32", torch.device("cpu")) == "fp32"


def test_cpu_flags_are_read_from_cpuinfo(monkeypatch, tmp_path):
    info = tmp_path / "cpuinfo"
    monkeypatch.setattr(precision, "Path", lambda p: info)
    info.write_text("flags\t\t: fpu sse avx2 avx512f avx512_bf16\n")
    assert precision.native_bf16(torch.device("cpu")) == (True, "this CPU has avx512_bf16")
    precision._cpuinfo.cache_clear()
    info.write_text("flags\t\t: fpu sse avx2\n")
    assert precision.native_bf16(torch.device("cpu"))[0] is False


def test_an_isa_cap_imitates_a_cpu_without_bf16_or_vnni(monkeypatch, tmp_path):
    """ONEDNN_MAX_CPU_ISA=AVX2 (how tests imitate an AVX2-only CPU) leaves neither bf16 nor VNNI, whatever the CPU has."""
    info = tmp_path / "cpuinfo"
    monkeypatch.setattr(precision, "Path", lambda p: info)
    info.write_text("vendor_id\t: AuthenticAMD\nmodel name\t: AMD EPYC 9R14\nflags\t\t: fpu avx2 avx512f avx512_vnni avx512_bf16\n")
    assert precision.int8_dot_products({}) == (True, "this CPU has avx512_vnni")
    assert precision.native_bf16(torch.device("cpu"))[0] is True
    assert precision.cpu_model() == "AMD EPYC 9R14 (AuthenticAMD)"
    monkeypatch.setenv("ONEDNN_MAX_CPU_ISA", "avx2")
    assert precision.int8_dot_products() == (False, "ONEDNN_MAX_CPU_ISA=AVX2 leaves oneDNN no VNNI")
    assert precision.native_bf16(torch.device("cpu")) == (False, "ONEDNN_MAX_CPU_ISA=AVX2 leaves oneDNN no bf16 instructions")
    assert precision.int8_dot_products({"ONEDNN_MAX_CPU_ISA": "AVX512_CORE_VNNI"})[0] is True


def test_auto_autocasts_to_bf16_only_with_native_bf16(monkeypatch):
    monkeypatch.setattr(precision, "native_bf16", lambda device: (False, "test CPU"))
    with precision.autocast(torch.device("cpu"), "auto"):
        assert (torch.ones(2, 2) @ torch.ones(2, 2)).dtype == torch.float32


def test_doctor_lists_each_piece(capsys):
    assert main(["doctor"]) == 0
    out = capsys.readouterr().out
    for piece in ("CPU:", "torch:", "bf16 on the CPU:", "int8 dot products (VNNI):", "jemalloc:", "GPUs:", "chromium:"):
        assert piece in out
