"""The GPU reference: the measuring script runs end to end (on the CPU here) and its file reads back."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from lab_utils import reference

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "gpu_reference.py"


@pytest.fixture(scope="module")
def cpu_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("reference")
    finished = subprocess.run([sys.executable, str(SCRIPT), "--device", "cpu", "--out", str(out), "--budget-s", "3"],
                              capture_output=True, text=True, timeout=600)
    assert finished.returncode == 0, finished.stderr[-2000:]
    files = list(out.glob("*.json"))
    assert len(files) == 1
    return files[0]


def test_script_writes_every_measurement_or_says_why_not(cpu_run):
    ref = reference.read(cpu_run)
    assert set(ref.measurements) | set(ref.skipped) >= {
        "matmul_and_copy", "batch_latency", "timing_pitfall", "step_memory", "fine_tune_speed", "oom_recovery"}
    assert ref.skipped == {"oom_recovery": "needs a CUDA device"}  # the only part a CPU cannot run
    sweep = ref.measurements["matmul_and_copy"]
    rows, skipped = sweep["rows"], sweep["skipped_cases"]
    # a busy machine may skip cases for the time box; each one is measured or said to be skipped
    kinds = {row["kind"] for row in rows} | {case["kind"] for case in skipped}
    assert kinds == {"matmul", "copy"}, (rows, skipped)
    assert all(row["seconds"] > 0 for row in rows)
    latency = ref.measurements["batch_latency"]
    # Both batch sizes were timed; which one is faster is a measurement, not something to assert.
    assert all(latency[batch]["sequences_per_s"] > 0 for batch in ("batch_1", "batch_64"))
    step = ref.measurements["step_memory"]
    assert step["measured"]["params_bytes"] == step["estimate"]["params_bytes"]
    assert ref.measurements["fine_tune_speed"]["full"]["tokens_per_s"] > 0


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


def test_the_script_refuses_cuda_without_a_gpu():
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    finished = subprocess.run([sys.executable, str(SCRIPT), "--device", "cuda"], capture_output=True, text=True,
                              timeout=120)
    assert finished.returncode == 2 and "--device cuda" in finished.stderr
