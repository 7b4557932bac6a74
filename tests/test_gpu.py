"""Checks that need a CUDA GPU: run them on the GPU machine with `pytest -m gpu tests/test_gpu.py`.

Skipped without CUDA. They check what the CPU cannot show, each in a way that fails when the
thing it checks is broken: timing.measure against CUDA events, measured rates below the catalog
peak of the detected GPU, the sweep's dtype handling, the budget and the step peak on CUDA, a
short fine-tune, NCCL with one rank, the reference script end to end, and recovery from an
out-of-memory error.
"""

import json
import statistics
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from alternating import median_ratio

from lab_utils import (
    bench,
    course_files,
    distributed,
    hardware,
    machine,
    memory,
    memory_measure,
    models,
    reference,
    timing,
    training,
)

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")]

ROOT = Path(__file__).resolve().parents[1]


def catalog_spec() -> hardware.Spec:
    """The catalog entry of the GPU torch sees (found by the name torch reports), else skip."""
    name = torch.cuda.get_device_name(0)
    try:
        return hardware.get(name)
    except ValueError:
        pytest.skip(f"{name!r} is not in the hardware catalog: no peak to compare with")


def native_half_dtype() -> torch.dtype:
    """bf16 where the GPU multiplies it natively, else fp16 (a T4)."""
    return torch.bfloat16 if torch.cuda.is_bf16_supported(including_emulation=False) else torch.float16


def cuda_event_seconds(fn, calls: int = 10, rounds: int = 7) -> float:
    """Median seconds per call from CUDA events recorded around ``calls`` calls: the GPU's own
    clock, independent of timing.measure's host clock and synchronize."""
    fn()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    seconds = []
    for _ in range(rounds):
        start.record()
        for _ in range(calls):
            fn()
        end.record()
        end.synchronize()
        seconds.append(start.elapsed_time(end) / 1e3 / calls)  # elapsed_time is in ms
    return statistics.median(seconds)


def test_measure_agrees_with_cuda_events():
    """A broken synchronize would time the launch (microseconds) instead of the product."""
    a = torch.randn(4096, 4096, device="cuda", dtype=native_half_dtype())
    ratio = median_ratio(
        lambda: timing.measure(lambda: a @ a, device="cuda", min_run_time=0.2).median_s,
        lambda: cuda_event_seconds(lambda: a @ a),
    )
    print(f"timing.measure / CUDA events, 4096 product: {ratio:.3f}")
    assert 0.85 <= ratio <= 1.15
    result = timing.measure(lambda: a @ a, device="cuda", min_run_time=0.2)
    assert result.runs >= 5 and result.warmup_calls >= 2


def test_measured_rates_stay_below_the_catalog_peaks():
    spec = catalog_spec()
    dtype = native_half_dtype()
    name = {torch.bfloat16: "bf16", torch.float16: "fp16"}[dtype]
    a, b = (torch.randn(8192, 8192, device="cuda", dtype=dtype) for _ in range(2))
    row = bench.measure_matmul(a, b, min_run_time=0.5)
    print(f"{name} matmul: {row.flops_per_s / spec.peak_flops[name]:.0%} of {spec.name}'s dense peak")
    assert 0.05 * spec.peak_flops[name] < row.flops_per_s < spec.peak_flops[name]
    del a, b
    elements = max(2**28, 4 * (machine.l2_cache_bytes("cuda") or 0)) // 4  # 1 GiB, well past the L2
    src = torch.ones(elements, device="cuda")
    copy = bench.measure_copy(src, torch.empty_like(src), min_run_time=0.5)
    print(f"copy: {copy.bytes_per_s / spec.bandwidth_bytes_per_s:.0%} of {spec.name}'s bandwidth")
    assert 0.05 * spec.bandwidth_bytes_per_s < copy.bytes_per_s < spec.bandwidth_bytes_per_s


def test_l2_size_matches_the_catalog_where_both_know_it():
    spec = catalog_spec()
    reported = getattr(torch.cuda.get_device_properties(0), "L2_cache_size", None)
    if spec.l2_bytes is None or not reported:
        pytest.skip("the catalog or torch does not give this GPU's L2 size")
    assert reported == spec.l2_bytes


def test_sweep_handles_dtypes_by_compute_capability_and_restores_precision():
    matmul = torch.backends.cuda.matmul
    before = matmul.fp32_precision
    matmul.fp32_precision = "tf32"  # the newer API: the legacy getter would now raise
    try:
        table = bench.sweep(
            sizes=(1024, 2048),
            dtypes=("fp32", "tf32", "bf16", "fp16"),
            copy_bytes=(2**28,),
            device="cuda",
            budget_s=60,
            min_run_time=0.1,
        )
        assert matmul.fp32_precision == "tf32"
    finally:
        matmul.fp32_precision = before
    major, _ = torch.cuda.get_device_capability(0)
    dtypes_run = {r.dtype for r in table.select("matmul")}
    skipped = {s.dtype: s.reason for s in table.skipped}
    assert {"fp32", "fp16"} <= dtypes_run
    assert ("tf32" in dtypes_run) == (major >= 8) and ("tf32" in skipped) == (major < 8)
    if torch.cuda.is_bf16_supported(including_emulation=False):
        assert "bf16" in dtypes_run
    else:
        assert "emulated" in skipped["bf16"]
    assert {r.kind for r in table.rows} == {"matmul", "copy", "triad"}
    assert all(r.threads is None for r in table.rows)


def test_budget_counts_only_what_the_block_creates():
    held = torch.empty(256 * 2**20, dtype=torch.uint8, device="cuda")  # an earlier cell's 256 MiB
    with memory_measure.budget(64 * 2**20, device="cuda"):
        kept = torch.empty(32 * 2**20, dtype=torch.uint8, device="cuda")
        with pytest.raises(memory_measure.BudgetExceeded) as caught:
            torch.empty(48 * 2**20, dtype=torch.uint8, device="cuda")
    assert caught.value.live_bytes == 80 * 2**20
    del held, kept


def test_cuda_step_peak_leaves_out_tensors_of_earlier_cells():
    config = models.GPTConfig(seq_len=128, n_layers=4, hidden=256, n_heads=4)
    held = torch.empty(2**30, dtype=torch.uint8, device="cuda")  # 1 GiB that is not the step's
    torch.manual_seed(0)
    model = models.TinyGPT(config).cuda()
    measured = memory_measure.measure_training_step(model, models.random_tokens(config, 16).cuda())
    state = memory.training_state_bytes(config.n_params, precision="fp32", optimizer="adamw")
    assert measured.params_bytes == state.params_bytes and measured.grads_bytes == state.grads_bytes
    assert measured.optimizer_states_bytes == state.optimizer_states_bytes
    assert measured.activations_bytes == pytest.approx(memory.tiny_gpt_activation_bytes(config, 16), rel=0.15)
    parts = measured.params_bytes + measured.grads_bytes + measured.optimizer_states_bytes
    assert parts <= measured.peak_bytes < held.numel()
    del held


def test_a_short_fine_tune_learns_on_the_gpu():
    config = models.GPTConfig(seq_len=128, n_layers=4, hidden=256, n_heads=4)
    torch.manual_seed(0)
    run = training.fine_tune(
        models.TinyGPT(config),
        training.corpus("domain", 262_144),
        method="full",
        steps=30,
        batch=16,
        device="cuda",
    )
    assert run.losses[-1] < run.losses[0] and run.eval_loss_after < run.eval_loss_before
    assert run.tokens_per_s > 0


def test_nccl_data_parallel_with_one_rank(tmp_path):
    out = tmp_path / "result.json"
    result = distributed.run_torchrun(
        course_files.path("scripts/ddp_train.py"),  # package data since it left notebooks/scripts
        [
            "--out",
            str(out),
            "--steps",
            "4",
            "--compute-steps",
            "1",
            "--allreduce-sizes",
            "4096",
            "1048576",
            "--allreduce-repeats",
            "2",
        ],
        nproc_per_node=1,
        timeout_s=300,
    )
    assert result.returncode == 0 and result.leftover_pids == ()
    report = json.loads(out.read_text())
    assert report["backend"] == "nccl" and report["world_size"] == 1 and report["identical"] is True
    assert report["losses"][-1] < report["losses"][0]


def test_reference_script_end_to_end(tmp_path):
    finished = subprocess.run(
        [
            sys.executable,
            str(ROOT / "scripts" / "gpu_reference.py"),
            "--out",
            str(tmp_path),
            "--budget-s",
            "30",
            "--min-run-time",
            "0.2",
        ],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert finished.returncode == 0, finished.stderr[-3000:]
    (path,) = tmp_path.glob("*.json")
    ref = reference.read(path)
    assert set(ref.skipped) <= {"peak_fractions"}, ref.skipped  # only a GPU the catalog lacks may skip
    oom = ref.measurements["oom_recovery"]
    assert oom["raised_out_of_memory"] and oom["recovered"]
    assert "driver_version" in ref.gpu_state and ref.software["cuda"]
    fractions = ref.measurements.get("peak_fractions")
    if fractions is not None:  # the GPU is in the catalog
        values = [v for k, v in fractions.items() if k.endswith(("_of_peak", "_of_bandwidth"))]
        assert values and all(0 < v < 1 for v in values), fractions


def test_notebook_02_transfer_cell_runs_its_gpu_branch(capsys):
    """Issue 18 item 12: the pinned-memory and overlap cell, which the CPU never runs."""
    from lab_utils.units import format_rate, format_seconds

    cells = json.loads((ROOT / "notebooks" / "02_matmul_cpu_vs_gpu.ipynb").read_text())["cells"]
    (source,) = ["".join(c["source"]) for c in cells if c.get("id") == "cell-29c"]
    report = machine.describe()
    exec(
        source,
        {
            "on_gpu": True,
            "device": torch.device("cuda"),
            "torch": torch,
            "timing": timing,
            "report": report,
            "format_rate": format_rate,
            "format_seconds": format_seconds,
        },
    )
    lines = capsys.readouterr().out.splitlines()
    assert [line.split(" (")[0].split(":")[0] for line in lines[:2]] == [
        "host to device from pageable memory",
        "host to device from pinned memory",
    ]
    assert len(lines) == 6 and all(f"measured on {report.device_name}" in line for line in lines)


def test_out_of_memory_is_caught_and_the_device_recovers():
    total = torch.cuda.get_device_properties(0).total_memory
    with pytest.raises(torch.cuda.OutOfMemoryError):
        torch.empty(2 * total, dtype=torch.uint8, device="cuda")
    torch.cuda.empty_cache()
    assert torch.ones(1024, device="cuda").sum().item() == 1024
