"""machine: the report, runtime detection, device choice and synchronisation."""

import platform
import sys
import types

import pytest
import torch

from lab_utils import machine


@pytest.fixture(scope="module")
def report():
    return machine.describe()


def test_report_matches_this_interpreter_and_torch(report):
    assert report.python_version == platform.python_version()
    assert report.torch_version == torch.__version__
    assert report.cuda_version == torch.version.cuda
    assert report.cuda_available == torch.cuda.is_available()
    assert report.torch_threads == torch.get_num_threads()


def test_report_sizes_are_plausible(report):
    assert report.logical_cores >= 1
    assert report.physical_cores is None or 1 <= report.physical_cores <= report.logical_cores
    assert report.ram_bytes > 256 * 2**20  # more than 256 MiB: a real machine
    assert report.cpu_model.strip()
    assert report.runtime in machine.RUNTIMES


def test_report_without_gpu_has_no_gpu_fields(report):
    if report.cuda_available:
        pytest.skip("this machine has a GPU")
    assert report.gpu_count == 0
    assert report.gpu_memory_bytes is None and report.gpu_compute_capability is None
    assert report.device_name == report.cpu_model


def test_report_renders_as_text_and_html(report):
    text = str(report)
    html = report._repr_html_()
    for label, value in report.rows():
        assert label in text and value in text
        assert label in html
    assert html.startswith("<table>") and html.endswith("</table>")
    assert len(text.splitlines()) == len(report.rows())


def test_report_reads_the_gpu_when_torch_sees_one(monkeypatch):
    """The GPU branch, exercised on a CPU machine with torch's answers replaced."""
    properties = types.SimpleNamespace(name="NVIDIA H200", total_memory=150_000_000_000, major=9, minor=0)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    monkeypatch.setattr(torch.cuda, "get_device_properties", lambda index: properties)
    report = machine.describe()
    assert report.cuda_available and report.gpu_count == 1
    assert report.device_name == "NVIDIA H200"
    assert report.gpu_memory_bytes == 150_000_000_000
    assert report.gpu_compute_capability == "9.0"
    assert "NVIDIA H200 x 1, 150.0 GB, compute capability 9.0" in str(report)


@pytest.mark.parametrize(
    "environ, expected",
    [
        ({}, "local"),
        ({"COLAB_RELEASE_TAG": "release-colab_20261101-060000_RC00"}, "colab"),
        ({"COLAB_GPU": "1"}, "colab"),
        ({"RUNPOD_POD_ID": "abc123"}, "runpod"),
        ({"HOME": "/root", "PATH": "/usr/bin"}, "local"),
    ],
)
def test_detect_runtime(environ, expected):
    assert machine.detect_runtime(environ) == expected


@pytest.mark.parametrize(
    "cuda, mps, expected",
    [(False, False, "cpu"), (True, False, "cuda"), (False, True, "mps"), (True, True, "cuda")],
)
def test_pick_device_prefers_cuda_then_mps_then_cpu(monkeypatch, cuda, mps, expected):
    """Issue 18 item 13: a Mac's GPU is picked through MPS where torch can use it."""
    monkeypatch.setattr(torch.cuda, "is_available", lambda: cuda)
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: mps)
    assert machine.pick_device() == torch.device(expected)


def test_a_torch_without_the_mps_backend_falls_back_to_the_cpu(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.delattr(torch.backends, "mps")
    assert machine.pick_device() == torch.device("cpu")


def test_report_reads_an_apple_gpu_through_torch_mps(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: True)
    monkeypatch.setattr(torch.mps, "recommended_max_memory", lambda: 48 * 2**30)
    monkeypatch.setattr(machine, "cpu_model", lambda: "Apple M1 Max")
    report = machine.describe()
    assert report.mps_available and not report.cuda_available
    assert report.gpu_memory_bytes == 48 * 2**30 and report.device_name == "Apple M1 Max"
    assert "Apple M1 Max GPU via MPS, up to 51.5 GB of unified memory" in str(report)


def test_synchronize_waits_on_mps(monkeypatch):
    calls = []
    monkeypatch.setattr(torch.mps, "synchronize", lambda: calls.append("mps"))
    machine.synchronize("mps")
    assert calls == ["mps"]


@pytest.mark.parametrize(
    "properties, expected",
    [
        (
            types.SimpleNamespace(name="NVIDIA H100 NVL", L2_cache_size=52_428_800),
            52_428_800,
        ),  # torch's figure
        (types.SimpleNamespace(name="NVIDIA A100 80GB PCIe"), 40 * 2**20),  # no torch figure: the catalog's
        (types.SimpleNamespace(name="NVIDIA Future GPU"), None),  # neither knows
    ],
)
def test_l2_cache_bytes_of_a_cuda_device(monkeypatch, properties, expected):
    monkeypatch.setattr(torch.cuda, "get_device_properties", lambda device=None: properties)
    assert machine.l2_cache_bytes("cuda") == expected
    assert machine.l2_cache_bytes("cpu") is None


def test_synchronize_on_cpu_is_a_no_op():
    assert machine.synchronize("cpu") is None
    assert machine.synchronize(torch.device("cpu")) is None


def test_synchronize_waits_on_the_named_cuda_device(monkeypatch):
    calls = []
    monkeypatch.setattr(torch.cuda, "synchronize", lambda device=None: calls.append(device))
    machine.synchronize("cuda:1")
    assert calls == [torch.device("cuda:1")]


@pytest.mark.parametrize("device, error", [(3, TypeError), ("gpu", ValueError), ("cuda:x", ValueError)])
def test_bad_devices_are_refused_with_the_parameter_named(device, error):
    with pytest.raises(error, match="device"):
        machine.synchronize(device)


def test_cpu_vector_unit_agrees_with_the_kernels_torch_picked():
    # torch dispatches its CPU kernels by the vector unit it finds: an independent reading.
    unit = machine.cpu_vector_unit()
    assert unit in (None, "avx512", "avx2", "neon")
    capability = torch.backends.cpu.get_cpu_capability()
    if platform.machine().lower() in ("arm64", "aarch64"):
        assert unit == "neon"
    elif capability == "AVX512":
        assert unit == "avx512"
    elif capability == "AVX2" and sys.platform != "win32":
        assert unit in ("avx2", "avx512")  # torch may keep AVX2 kernels on some AVX-512 CPUs


def test_every_vector_unit_has_an_assumed_flop_per_cycle():
    from lab_utils import assumptions

    for unit in ("avx512", "avx2", "neon", "unknown"):
        entry = assumptions.get(f"fp32_flops_per_cycle.{unit}")
        assert entry.value in (8, 16, 32, 64) and entry.why  # 2 FLOP x lanes x units: a power of two
