"""The GPU reference: the measuring script runs end to end (on the CPU here) and its file reads back."""

import json
import subprocess
import sys
import types
from pathlib import Path

import pytest
from loading import load_module

from lab_utils import reference

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "gpu_reference.py"


@pytest.fixture(scope="module")
def cpu_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("reference")
    finished = subprocess.run(
        [
            sys.executable,
            str(SCRIPT),
            "--device",
            "cpu",
            "--out",
            str(out),
            "--budget-s",
            "3",
            "--min-run-time",
            "0.05",
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert finished.returncode == 0, finished.stderr[-2000:]
    files = list(out.glob("*.json"))
    assert len(files) == 1
    return files[0]


@pytest.mark.slow
def test_script_writes_every_measurement_or_says_why_not(cpu_run):
    ref = reference.read(cpu_run)
    assert set(ref.measurements) | set(ref.skipped) >= {
        "matmul_and_copy",
        "batch_latency",
        "timing_pitfall",
        "step_memory",
        "fine_tune_speed",
        "oom_recovery",
    }
    assert ref.skipped == {"oom_recovery": "needs a CUDA device"}  # the only part a CPU cannot run
    sweep = ref.measurements["matmul_and_copy"]
    rows, skipped = sweep["rows"], sweep["skipped_cases"]
    # a busy machine may skip cases for the time box; each one is measured or said to be skipped
    kinds = {row["kind"] for row in rows} | {case["kind"] for case in skipped}
    assert kinds == {"matmul", "copy", "triad"}, (rows, skipped)
    assert all(row["median_s"] > 0 for row in rows)
    latency = ref.measurements["batch_latency"]
    # Both batch sizes were timed; which one is faster is a measurement, not something to assert.
    assert all(latency[batch]["sequences_per_s"] > 0 for batch in ("batch_1", "batch_64"))
    step = ref.measurements["step_memory"]
    assert step["measured"]["params_bytes"] == step["estimate"]["params_bytes"]
    assert ref.measurements["fine_tune_speed"]["full"]["tokens_per_s"] > 0


def test_script_records_the_software_it_ran_with(cpu_run):
    ref = reference.read(cpu_run)
    assert ref.software["torch"] and "course_commit" in ref.software and "cublas" in ref.software
    assert json.loads(cpu_run.read_text())["min_run_time_s"] == 0.05
    assert not list(cpu_run.parent.glob("*.partial"))


@pytest.fixture(scope="module")
def script():
    return load_module("gpu_reference", SCRIPT)


def matmul_row(dtype, flops_per_s):
    return {"kind": "matmul", "dtype": dtype, "flops_per_s": flops_per_s, "bytes_per_s": 1.0}


@pytest.mark.parametrize(
    "torch_name, catalog_name",
    [
        ("NVIDIA H200 NVL", "H200 NVL"),
        ("NVIDIA H100 NVL", "H100 NVL"),
        ("NVIDIA A100 80GB PCIe", "A100 80GB PCIe"),
        ("NVIDIA H200", "H200 SXM"),
    ],
)
def test_peak_fractions_find_the_parts_torch_names(script, torch_name, catalog_name):
    """Issue 18 item 8: these names crashed the run after all the measuring."""
    from lab_utils import hardware

    spec = hardware.get(catalog_name)
    rows = [
        matmul_row("bf16", spec.peak_flops["bf16"] / 2),
        matmul_row("bf16", spec.peak_flops["bf16"] / 4),
        {
            "kind": "copy",
            "dtype": "fp32",
            "flops_per_s": 0.0,
            "bytes_per_s": spec.bandwidth_bytes_per_s * 0.8,
        },
    ]
    fractions = script.peak_fractions(torch_name, {"rows": rows})
    assert fractions["catalog_device"] == catalog_name
    assert fractions["bf16_fraction_of_peak"] == pytest.approx(0.5)  # the best of the two rows
    assert fractions["copy_fraction_of_bandwidth"] == pytest.approx(0.8)


def test_a_dtype_without_a_catalog_peak_is_named_not_fatal(script):
    rows = [matmul_row("fp16", 32.5e12), matmul_row("bf16", 5e12)]  # a T4 has no bf16 peak in the catalog
    fractions = script.peak_fractions("Tesla T4", {"rows": rows})
    assert fractions["fp16_fraction_of_peak"] == pytest.approx(0.5)  # 32.5 of the datasheet's 65 TFLOP/s
    assert fractions["dtypes_without_a_catalog_peak"] == ["bf16"]


def test_results_are_written_as_they_come_and_a_failing_step_is_recorded(script, tmp_path, monkeypatch):
    seen_on_disk = {}

    def second_step(device, min_run_time):
        seen_on_disk.update(json.loads(next(tmp_path.glob("*.json")).read_text())["measurements"])
        raise RuntimeError("CUDA error: an illegal memory access was encountered")

    monkeypatch.setattr(script, "matmul_and_copy", lambda device, budget_s, min_run_time: {"rows": []})
    monkeypatch.setattr(script, "batch_latency", second_step)
    monkeypatch.setattr(script, "timing_pitfall", lambda device, min_run_time: {"n": 1})
    monkeypatch.setattr(script, "step_memory", lambda device: {"measured": {}})
    monkeypatch.setattr(script, "fine_tune_speed", lambda device: {})
    assert script.main(["--device", "cpu", "--out", str(tmp_path)]) == 0
    assert seen_on_disk == {"matmul_and_copy": {"rows": []}}  # on disk before the next step ran
    ref = reference.read(next(tmp_path.glob("*.json")))
    assert ref.skipped["batch_latency"].startswith("RuntimeError: CUDA error")
    assert set(ref.measurements) == {"matmul_and_copy", "timing_pitfall", "step_memory", "fine_tune_speed"}


def test_nvidia_smi_state_reads_every_field_or_says_why_not(script):
    values = ["NVIDIA H200", "570.86.15", "P0", "1980", "1980", "2619", "700.00", "123.45", "35", "Disabled"]
    answer = types.SimpleNamespace(stdout=", ".join(values) + "\n")
    state = script.nvidia_smi_state(run=lambda *args, **kwargs: answer)
    assert state["driver_version"] == "570.86.15" and state["mig.mode.current"] == "Disabled"
    assert state["clocks.sm"] == "1980" and state["power.limit"] == "700.00"

    def missing(*args, **kwargs):
        raise FileNotFoundError("nvidia-smi")

    assert script.nvidia_smi_state(run=missing)["error"].startswith("FileNotFoundError")


def test_the_script_needs_an_output_folder(script, capsys):
    with pytest.raises(SystemExit) as exited:
        script.main(["--device", "cpu"])
    assert exited.value.code == 2 and "--out" in capsys.readouterr().err


def test_script_records_the_machine_and_the_date(cpu_run):
    data = json.loads(cpu_run.read_text())
    ref = reference.read(cpu_run)
    assert ref.device == data["machine"]["device_name"]
    assert cpu_run.name == reference.slug(ref.device) + ".json"
    assert len(ref.date) == 10 and ref.date[4] == "-"
    assert reference.load(ref.device, directory=cpu_run.parent) == ref
    assert reference.caption(ref) == f"measured on {ref.device}, {ref.date}"


def test_no_reference_yet(tmp_path):
    assert reference.load(directory=tmp_path) is None
    assert reference.load("NVIDIA H200", directory=tmp_path) is None
    assert reference.caption(None) == "no GPU reference yet"


def test_bad_files_and_names_are_refused(tmp_path):
    bad = tmp_path / "x.json"
    bad.write_text(json.dumps({"format": 99}))
    with pytest.raises(ValueError, match="format"):
        reference.read(bad)
    bad.write_text(json.dumps({"format": reference.FORMAT_VERSION, "device": "X"}))
    with pytest.raises(ValueError, match="lacks date"):
        reference.read(bad)
    with pytest.raises(ValueError, match="device_name"):
        reference.slug("  ")


def test_slug():
    assert reference.slug("NVIDIA H200") == "nvidia-h200"
    assert reference.slug("NVIDIA A100-SXM4-80GB") == "nvidia-a100-sxm4-80gb"


@pytest.mark.slow
def test_the_script_refuses_cuda_without_a_gpu():
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    finished = subprocess.run(
        [sys.executable, str(SCRIPT), "--device", "cuda", "--out", "unused"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert finished.returncode == 2 and "--device cuda" in finished.stderr
