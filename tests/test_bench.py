"""lab_utils.bench: agrees with independent timers, counts honestly, keeps its budget, refuses bad input.

Timings are noisy on a shared machine, so the agreement tests compare ratios measured
alternately (tests/alternating.median_ratio); run with -s to see them.
"""

import statistics
import time

import numpy as np
import pytest
import torch
from alternating import median_ratio

from lab_utils import bench, bench_cases

BUSY_HINT = (
    "measured on a busy machine? Other programs holding cores slow bench's multi-threaded "
    "calls, and holding the memory bus pushes torch's copy (which reads each destination "
    "line before writing it) toward 2/3 of memcpy's rate: rerun on a quiet machine"
)


@pytest.mark.timing
def test_sweep_gflops_of_a_1024_fp32_matmul_agrees_with_a_plain_stopwatch():
    # Not torch.utils.benchmark: bench times through timing.measure, which wraps it. An
    # independent perf_counter loop of the same product, measured alternately, must agree.
    n = 1024
    a, b = torch.randn(n, n), torch.randn(n, n)

    def sweep_flops_per_s():
        # The budget is only a ceiling (a quiet machine takes about a second): a sweep beside other
        # test processes and notebooks once skipped the product on a 30 s budget, its probe slowed.
        table = bench.sweep(sizes=(n,), copy_bytes=(), device="cpu", budget_s=600, min_run_time=0.2)
        row = table.best("matmul", "fp32")
        assert row is not None, f"the product was skipped: {[s.reason for s in table.skipped]}"
        return row.flops_per_s

    def stopwatch_flops_per_s(calls=15):
        a @ b  # warm-up
        seconds = []
        for _ in range(calls):
            start = time.perf_counter()
            a @ b
            seconds.append(time.perf_counter() - start)
        return 2 * n**3 / statistics.median(seconds)  # 2n^3 FLOP per product, by hand; median as bench

    ratio = median_ratio(sweep_flops_per_s, stopwatch_flops_per_s)
    print(f"\nbench.sweep / perf_counter GFLOP/s ratio, 1024x1024 fp32: {ratio:.3f}")
    assert 0.5 <= ratio <= 2.0, BUSY_HINT  # wide: both medians, measured alternately


def test_measure_copy_copies_and_counts_read_plus_written():
    src, dst = torch.randn(2**16), torch.zeros(2**16)
    row = bench.measure_copy(src, dst)
    assert torch.equal(src, dst)
    assert row.bytes_per_call == 2 * 4 * 2**16  # 256 KiB read + 256 KiB written


def test_rows_count_flops_and_bytes_as_the_roofline_does():
    table = bench.sweep(
        sizes=(64, 128),
        dtypes=("fp32", "bf16"),
        copy_bytes=(2**20,),
        device="cpu",
        budget_s=30,
        min_run_time=0.01,
    )
    everyone = torch.get_num_threads()
    one_thread = [("copy", 2**18, "fp32", 1)] if everyone > 1 else []
    assert [(r.kind, r.size, r.dtype, r.threads) for r in table.rows] == [
        ("copy", 2**18, "fp32", everyone),
        *one_thread,
        ("triad", 2**18, "fp32", everyone),
        ("matmul", 64, "fp32", None),
        ("matmul", 128, "fp32", None),
        ("matmul", 64, "bf16", None),
        ("matmul", 128, "bf16", None),
    ]
    assert table.skipped == () and table.device == "cpu" and table.budget_s == 30
    for row in table.select("matmul"):
        n, size = row.size, 4 if row.dtype == "fp32" else 2
        assert row.flops_per_call == 2 * n**3
        assert row.bytes_per_call == size * 3 * n**2
        assert row.flops_per_s == pytest.approx(row.flops_per_call / row.median_s)
        assert row.bytes_per_s == pytest.approx(row.bytes_per_call / row.median_s)
        assert row.intensity == pytest.approx(n / 6 if row.dtype == "fp32" else n / 3)
        assert row.median_s > 0 and not hasattr(row, "seconds") and row.iqr_s >= 0 and row.device == "cpu"
    copy = table.best("copy")
    assert copy.bytes_per_call == 2 * 2**20 and copy.flops_per_s == 0 and copy.intensity == 0
    assert copy.array_bytes == 2**20 and table.best("triad").array_bytes == 2**20
    assert table.best("triad").bytes_per_call == 3 * 2**20  # b and c read, a written
    assert table.best("copy", threads=1) in (None, *table.select("copy", threads=1))
    assert table.best("matmul", "fp16") is None
    assert [p.intensity for p in table.points()] == [r.intensity for r in table.select("matmul")]
    assert table.points()[0].label == "fp32 matmul on cpu, measured here"
    text = str(table)
    assert "FLOP/s" in text and "n=128" in text and "read + written" in text


def test_sweep_skips_what_does_not_fit_its_budget():
    # 2 x 8192^3 = 1.1e12 FLOPs: seconds on any CPU, so it cannot fit a 1 s budget
    table = bench.sweep(sizes=(64, 8192), copy_bytes=(), device="cpu", budget_s=1.0, min_run_time=0.01)
    assert [r.size for r in table.rows] == [64]
    (skipped,) = table.skipped
    assert (skipped.kind, skipped.size, skipped.dtype) == ("matmul", 8192, "fp32")
    assert "budget" in skipped.reason
    assert "skipped matmul n=8192 fp32" in str(table)


def test_tf32_is_skipped_on_a_cpu_with_the_reason():
    table = bench.sweep(
        sizes=(32,), dtypes=("tf32",), copy_bytes=(), device="cpu", budget_s=60, min_run_time=0.01
    )
    assert table.rows == ()
    assert "CUDA" in table.skipped[0].reason


def test_a_case_that_fails_is_skipped_with_the_error_and_the_sweep_goes_on(monkeypatch):
    real_operands = bench._operands

    def operands(kind, size, dtype, device):
        if dtype == "fp16":
            raise RuntimeError("CUDA out of memory. Tried to allocate 2.00 GiB\nmore details")
        return real_operands(kind, size, dtype, device)

    monkeypatch.setattr(bench, "_operands", operands)
    table = bench.sweep(
        sizes=(32,), dtypes=("fp16", "fp32"), copy_bytes=(), device="cpu", budget_s=60, min_run_time=0.01
    )
    assert [(r.size, r.dtype) for r in table.rows] == [(32, "fp32")]
    assert table.skipped == (
        bench.Skipped("matmul", 32, "fp16", "failed: CUDA out of memory. Tried to allocate 2.00 GiB"),
    )


def test_measure_copy_cuts_the_arrays_over_threads_and_copies_every_byte():
    src, dst = torch.arange(10_000, dtype=torch.float32), torch.zeros(10_000)
    for threads in (1, 3):
        dst.zero_()
        row = bench.measure_copy(src, dst, min_run_time=0.01, threads=threads)
        assert torch.equal(src, dst) and row.threads == threads
        assert f"{threads} thread" in row.describe()
    assert bench.measure_copy(src, dst, min_run_time=0.01).threads == torch.get_num_threads()
    # 40,000 bytes in 3 pieces on 4 KiB pages: ceil(40000 / 3 / 4096) = 4 pages = 16,384 bytes each
    pieces = bench_cases._chunks(np.zeros(40_000, dtype=np.uint8), 3)
    assert [p.size for p in pieces] == [16_384, 16_384, 7_232]
    assert bench_cases._chunks(np.zeros(0, dtype=np.uint8), 2) == []


def test_measure_triad_computes_b_plus_scalar_c_and_counts_three_arrays():
    a, b, c = torch.zeros(1000), torch.arange(1000.0), torch.full((1000,), 2.0)
    row = bench.measure_triad(a, b, c, min_run_time=0.01, threads=1)
    assert torch.equal(a, torch.arange(1000.0) + 6.0)  # b + 3 x 2, by hand
    assert (row.kind, row.size, row.bytes_per_call, row.threads) == ("triad", 1000, 3 * 4000, 1)


def test_threads_are_refused_off_the_cpu():
    src = torch.ones(16, device="meta")
    with pytest.raises(ValueError, match="threads=2"):
        bench.measure_copy(src, torch.ones(16, device="meta"), threads=2)


def test_default_sizes_reach_a_gpus_plateau():
    assert bench.default_sizes("cpu") == bench.CPU_SIZES
    assert bench.default_sizes("cuda") == bench.GPU_SIZES and max(bench.GPU_SIZES) >= 8192


def patch_cuda_capability(monkeypatch, major, minor):
    """A CUDA GPU of compute capability major.minor, as torch.cuda would describe it."""
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda device=None: (major, minor))
    monkeypatch.setattr(
        torch.cuda, "is_bf16_supported", lambda including_emulation=True: including_emulation or major >= 8
    )


@pytest.mark.parametrize(
    "major, minor, tf32, bf16", [(7, 5, False, False), (8, 0, True, True), (9, 0, True, True)]
)
def test_tf32_and_bf16_need_compute_capability_8(monkeypatch, major, minor, tf32, bf16):
    """Issue 18 item 2: a T4 (7.5) would only emulate bf16, so the sweep skips it and says why."""
    patch_cuda_capability(monkeypatch, major, minor)
    cuda = torch.device("cuda")
    assert (bench._unsupported("tf32", cuda) is None) == tf32
    assert (bench._unsupported("bf16", cuda) is None) == bf16
    assert bench._unsupported("fp16", cuda) is None and bench._unsupported("fp32", cuda) is None
    if not bf16:
        assert "emulated" in bench._unsupported("bf16", cuda) and f"{major}.{minor}" in bench._unsupported(
            "bf16", cuda
        )


def test_sweep_keeps_the_newer_fp32_precision_api_and_restores_it():
    """Issue 18 item 9: once torch.backends.cuda.matmul.fp32_precision is set, the legacy getter
    raises; the sweep must save and restore through the newer API."""
    matmul = torch.backends.cuda.matmul
    if not hasattr(matmul, "fp32_precision"):
        pytest.skip("this torch has only the legacy precision API")
    before = matmul.fp32_precision
    matmul.fp32_precision = "tf32"
    try:
        with bench._matmul_precision("fp32"):
            assert matmul.fp32_precision == "ieee" and not bench_cases._tf32_matmuls()
        with bench._matmul_precision("tf32"):
            assert matmul.fp32_precision == "tf32" and bench_cases._tf32_matmuls()
        table = bench.sweep(sizes=(32,), copy_bytes=(), device="cpu", budget_s=60, min_run_time=0.01)
        assert matmul.fp32_precision == "tf32" and table.rows[0].dtype == "fp32"
    finally:
        matmul.fp32_precision = before


def test_sweep_restores_the_float32_matmul_precision():
    before = torch.get_float32_matmul_precision()
    torch.set_float32_matmul_precision("high")
    try:
        table = bench.sweep(sizes=(32,), copy_bytes=(), device="cpu", budget_s=60, min_run_time=0.01)
        assert torch.get_float32_matmul_precision() == "high"
        assert table.rows[0].dtype == "fp32"  # on a CPU, "high" does not mean TF32
    finally:
        torch.set_float32_matmul_precision(before)


def test_progress_reports_every_case(capsys):
    events = []
    bench.sweep(
        sizes=(16, 32),
        dtypes=("fp32", "tf32"),
        copy_bytes=(4096,),
        device="cpu",
        budget_s=60,
        min_run_time=0.01,
        progress=events.append,
    )
    bandwidth = 3 if torch.get_num_threads() > 1 else 2  # copy (all threads, one thread), triad
    total = bandwidth + 4
    assert [(e.done, e.total) for e in events] == [(i, total) for i in range(1, total + 1)]
    # the smallest product of each dtype first (tf32 is skipped on a CPU), then the rest in order
    order = [(e.kind, e.size, e.dtype) for e in events]
    assert order[:2] == [("matmul", 16, "fp32"), ("matmul", 16, "tf32")]
    assert [kind for kind, _, _ in order[2 : 2 + bandwidth]] == ["copy"] * (bandwidth - 1) + ["triad"]
    assert order[2 + bandwidth :] == [("matmul", 32, "fp32"), ("matmul", 32, "tf32")]
    assert [e.row is None for e in events] == [False, True] + [False] * (bandwidth + 1) + [True]
    assert all(e.skipped_reason for e in events if e.row is None)
    assert events[-1].elapsed_s >= events[0].elapsed_s

    bench.sweep(sizes=(16,), copy_bytes=(), device="cpu", budget_s=60, min_run_time=0.01, progress=True)
    assert capsys.readouterr().out.startswith("[1/1, ")


def test_a_budget_spent_on_copies_still_measures_a_product_and_lists_cases_in_order(monkeypatch):
    """A busy machine can spend a short budget on the copies (here a copy that sleeps past it):
    the smallest product ran first, and the table still lists the copy before it."""
    real_copy = bench.measure_copy

    def slow_copy(*args, **kwargs):
        time.sleep(1.5)
        return real_copy(*args, **kwargs)

    monkeypatch.setattr(bench, "measure_copy", slow_copy)
    table = bench.sweep(sizes=(16, 32), copy_bytes=(4096,), device="cpu", budget_s=1.0, min_run_time=0.01)
    assert [(r.kind, r.size) for r in table.rows] == [("copy", 1024), ("matmul", 16)]
    assert ("matmul", 32) in [(s.kind, s.size) for s in table.skipped]
    assert all("budget" in s.reason for s in table.skipped)


def test_measure_matmul_labels_the_dtype_and_counts_one_product():
    row = bench.measure_matmul(
        torch.ones(8, 8, dtype=torch.float16), torch.ones(8, 8, dtype=torch.float16), min_run_time=0.01
    )
    assert (row.kind, row.size, row.dtype, row.flops_per_call, row.bytes_per_call) == (
        "matmul",
        8,
        "fp16",
        1024,
        384,
    )


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        ({"sizes": (0,)}, ValueError, "sizes"),
        ({"sizes": (64.0,)}, TypeError, "sizes"),
        ({"sizes": 64}, TypeError, "sizes"),
        ({"copy_bytes": (2,)}, ValueError, "copy_bytes"),
        ({"dtypes": ("fp64",)}, ValueError, "fp64"),
        ({"dtypes": "fp32"}, TypeError, "dtypes"),
        ({"budget_s": 0}, ValueError, "budget_s"),
        ({"budget_s": float("inf")}, ValueError, "budget_s"),
        ({"budget_s": "10"}, TypeError, "budget_s"),
        ({"min_run_time": -1}, ValueError, "min_run_time"),
        ({"progress": "yes"}, TypeError, "progress"),
        ({"device": "tpu9"}, ValueError, "device"),
    ],
)
def test_sweep_refuses_bad_input(kwargs, error, match):
    arguments = {"sizes": (16,), "copy_bytes": (), "device": "cpu", "budget_s": 1, **kwargs}
    with pytest.raises(error, match=match):
        bench.sweep(**arguments)


@pytest.mark.parametrize(
    "call, error, match",
    [
        (lambda: bench.measure_matmul(torch.ones(4, 3), torch.ones(4, 3)), ValueError, "square"),
        (
            lambda: bench.measure_matmul(torch.ones(4, 4), torch.ones(4, 4, dtype=torch.float16)),
            ValueError,
            "dtype",
        ),
        (lambda: bench.measure_matmul([[1.0]], torch.ones(1, 1)), TypeError, "a must be a torch.Tensor"),
        (lambda: bench.measure_copy(torch.ones(4), torch.ones(5)), ValueError, "shape"),
        (lambda: bench.measure_copy(torch.ones(4, 4).t(), torch.ones(4, 4)), ValueError, "contiguous"),
        (
            lambda: bench.measure_copy(torch.ones(4), torch.ones(4), min_run_time=0),
            ValueError,
            "min_run_time",
        ),
    ],
)
def test_measure_refuses_bad_input(call, error, match):
    with pytest.raises(error, match=match):
        call()
