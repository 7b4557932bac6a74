"""lab_utils.parallel: Amdahl and Gustafson against known values, the fit against data made
from the law itself; lab_utils.threads: the thread sweep's bookkeeping (never its timings)."""

import doctest
import math
import random

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from lab_utils import parallel, threads
from lab_utils.parallel import amdahl_limit, amdahl_speedup, fit_parallel_fraction, gustafson_speedup
from lab_utils.threads import thread_scaling

fractions = st.floats(min_value=0.0, max_value=1.0, allow_nan=False)
worker_counts = st.lists(st.integers(min_value=1, max_value=1024), min_size=1, max_size=12)


def test_docstring_examples():
    assert doctest.testmod(parallel).failed == 0


# ---------------------------------------------------------------------------- Amdahl


def test_amdahl_known_value():
    # 1 / (0.05 + 0.95 / 8) = 1 / 0.16875
    assert amdahl_speedup(0.95, 8) == pytest.approx(5.925925925925926, rel=1e-12)


@pytest.mark.parametrize("p, limit", [(0.95, 20.0), (0.5, 2.0), (0.9, 10.0), (0.0, 1.0), (1.0, math.inf)])
def test_amdahl_limit_is_one_over_serial_fraction(p, limit):
    assert amdahl_limit(p) == pytest.approx(limit)


def test_amdahl_approaches_its_limit():
    assert amdahl_speedup(0.95, 10**9) == pytest.approx(amdahl_limit(0.95), rel=1e-6)


@pytest.mark.parametrize("n", [1, 2, 7, 64])
def test_amdahl_edge_fractions(n):
    assert amdahl_speedup(0.0, n) == 1.0  # nothing parallel: no gain
    assert amdahl_speedup(1.0, n) == pytest.approx(n)  # all parallel: linear
    assert amdahl_speedup(0.7, 1) == 1.0  # one worker: no gain


@given(fractions, st.integers(min_value=1, max_value=10**6))
def test_amdahl_lies_between_one_and_both_bounds(p, n):
    s = amdahl_speedup(p, n)
    assert 1.0 - 1e-12 <= s <= min(n, amdahl_limit(p)) * (1 + 1e-12)
    assert s <= amdahl_speedup(p, n + 1) * (1 + 1e-12)  # more workers never hurt in the model


# ---------------------------------------------------------------------------- Gustafson


def test_gustafson_known_values():
    assert gustafson_speedup(0.95, 8) == pytest.approx(0.05 + 0.95 * 8)
    assert gustafson_speedup(0.95, 8) == pytest.approx(7.65)
    assert gustafson_speedup(0.9, 100) == pytest.approx(90.1)  # Gustafson's 1988 form N + (1 - N) s
    assert gustafson_speedup(1.0, 64) == pytest.approx(64)
    assert gustafson_speedup(0.0, 64) == 1.0


@given(fractions, st.integers(min_value=1, max_value=10**6))
def test_gustafson_never_below_amdahl_and_grows_without_limit(p, n):
    assert gustafson_speedup(p, n) >= amdahl_speedup(p, n) * (1 - 1e-12)
    assert gustafson_speedup(p, n) <= n * (1 + 1e-12)


# ---------------------------------------------------------------------------- fit


@given(fractions, worker_counts)
def test_fit_recovers_p_exactly_from_amdahl_data(p, workers):
    workers = workers + [2]  # at least one count above 1
    speedups = [amdahl_speedup(p, n) for n in workers]
    fit = fit_parallel_fraction(workers, speedups)
    assert fit.parallel_fraction == pytest.approx(p, abs=1e-9)
    assert fit.rms_speedup_error == pytest.approx(0.0, abs=1e-6)
    assert fit.points == len(workers)


def test_fit_from_two_points_is_the_textbook_inversion():
    # one pair (2 workers, speed-up S) gives p = 2 (1 - 1/S)
    fit = fit_parallel_fraction([1, 2], [1.0, 1.6])
    assert fit.parallel_fraction == pytest.approx(2 * (1 - 1 / 1.6))
    assert fit.speedup(2) == pytest.approx(1.6)
    assert fit.limit == pytest.approx(1 / (1 - fit.parallel_fraction))


@settings(max_examples=50)
@given(
    st.floats(min_value=0.3, max_value=0.99),
    st.floats(min_value=0.001, max_value=0.05),
    st.integers(min_value=0, max_value=2**32 - 1),
)
def test_fit_from_noisy_data_stays_within_the_noise_bound(p, noise, seed):
    """Speed-ups off by at most +-noise (relative) move p by at most the bound the
    closed form implies: |dp| <= sum(x * y * d) / sum(x^2), d = noise / (1 - noise)."""
    rng = random.Random(seed)
    workers = [1, 2, 3, 4, 6, 8, 12, 16, 32]
    true = [amdahl_speedup(p, n) for n in workers]
    noisy = [s * (1 + rng.uniform(-noise, noise)) for s in true]
    fit = fit_parallel_fraction(workers, noisy)
    xs = [1 - 1 / n for n in workers]
    d = noise / (1 - noise)
    bound = sum(x * (1 / s) * d for x, s in zip(xs, true)) / sum(x * x for x in xs)
    assert abs(fit.unconstrained_fraction - p) <= bound + 1e-12
    assert abs(fit.parallel_fraction - p) <= bound + 1e-12


def test_fit_from_noisy_data_is_close_on_average():
    rng = random.Random(1)
    workers = list(range(1, 17))
    estimates = []
    for _ in range(200):
        speedups = [amdahl_speedup(0.9, n) * rng.gauss(1.0, 0.03) for n in workers]
        estimates.append(fit_parallel_fraction(workers, speedups).parallel_fraction)
    assert sum(estimates) / len(estimates) == pytest.approx(0.9, abs=0.005)
    assert max(abs(e - 0.9) for e in estimates) < 0.03


def test_fit_holds_p_within_zero_and_one_and_reports_the_raw_estimate():
    slower = fit_parallel_fraction([1, 2], [1.0, 0.8])  # two threads slower than one
    assert slower.parallel_fraction == 0.0
    assert slower.unconstrained_fraction < 0
    assert slower.rms_speedup_error == pytest.approx(math.sqrt((0**2 + 0.2**2) / 2))  # fitted: 1.0, 1.0
    superlinear = fit_parallel_fraction([1, 2, 4], [1.0, 2.2, 4.6])
    assert superlinear.parallel_fraction == 1.0
    assert superlinear.unconstrained_fraction > 1
    assert superlinear.limit == math.inf


# ---------------------------------------------------------------------------- input validation


@pytest.mark.parametrize("function", [amdahl_speedup, gustafson_speedup])
@pytest.mark.parametrize(
    "p, n, error, match",
    [
        (1.5, 2, ValueError, r"parallel_fraction=1\.5.*between 0 and 1"),
        (-0.1, 2, ValueError, "parallel_fraction"),
        (float("nan"), 2, ValueError, "parallel_fraction"),
        ("0.5", 2, TypeError, "parallel_fraction.*str"),
        (True, 2, TypeError, "parallel_fraction"),
        (0.5, 0, ValueError, r"workers=0.*>= 1"),
        (0.5, 2.5, TypeError, "workers.*float"),
        (0.5, True, TypeError, "workers"),
        (0.5, None, TypeError, "workers"),
    ],
)
def test_formulas_refuse_bad_input(function, p, n, error, match):
    with pytest.raises(error, match=match):
        function(p, n)


def test_limit_refuses_bad_input():
    with pytest.raises(ValueError, match="parallel_fraction=2"):
        amdahl_limit(2)


@pytest.mark.parametrize(
    "workers, speedups, error, match",
    [
        ([1, 2], [1.0], ValueError, "one speed-up per worker count"),
        ([1, 1], [1.0, 1.0], ValueError, "at least one worker count > 1"),
        ([], [], ValueError, "at least one worker count > 1"),
        ([1, 0], [1.0, 1.0], ValueError, "workers"),
        ([1, 2], [1.0, 0.0], ValueError, "speedups.*> 0"),
        ([1, 2], [1.0, float("inf")], ValueError, "speedups"),
        ([1, 2], [1.0, "2"], TypeError, "speedups"),
        ([1, 2.0], [1.0, 2.0], TypeError, "workers"),
        ("12", [1.0, 2.0], TypeError, "workers.*sequence"),
        ([1, 2], 2.0, TypeError, "speedups.*sequence"),
    ],
)
def test_fit_refuses_bad_input(workers, speedups, error, match):
    with pytest.raises(error, match=match):
        fit_parallel_fraction(workers, speedups)


# ---------------------------------------------------------------------------- thread sweep


@pytest.fixture
def restore_threads():
    original = torch.get_num_threads()
    yield original
    torch.set_num_threads(original)


def test_thread_sweep_measures_each_count_under_that_many_threads(restore_threads):
    seen = []

    def work():
        seen.append(torch.get_num_threads())

    result = thread_scaling(work, threads=[2, 1], min_run_time=0.01)
    assert result.threads == (1, 2)
    assert set(seen) == {1, 2}
    assert len(result.median_s) == len(result.iqr_s) == 2
    assert all(s > 0 for s in result.median_s)
    assert result.speedups[0] == 1.0
    assert result.skipped == ()
    assert torch.get_num_threads() == restore_threads


def test_thread_sweep_defaults_to_every_count_up_to_torch_threads(restore_threads):
    result = thread_scaling(lambda: None, min_run_time=0.01)
    assert result.threads == tuple(threads._default_threads(restore_threads))
    assert result.threads[0] == 1 and result.threads[-1] == restore_threads
    assert torch.get_num_threads() == restore_threads


def test_default_counts_on_many_cores_are_powers_of_two_and_the_maximum():
    assert threads._default_threads(1) == [1]
    assert threads._default_threads(8) == list(range(1, 9))
    assert threads._default_threads(96) == [1, 2, 4, 8, 16, 32, 64, 96]
    assert threads._default_threads(64) == [1, 2, 4, 8, 16, 32, 64]


def test_thread_sweep_times_each_count_in_at_least_min_runs_blocks(restore_threads, monkeypatch):
    from lab_utils import timing

    runs = []
    real_measure = timing.measure

    def recording_measure(fn, **kwargs):
        result = real_measure(fn, **kwargs)
        runs.append(result.runs)
        return result

    monkeypatch.setattr(timing, "measure", recording_measure)
    thread_scaling(lambda: None, threads=[1, 2], min_run_time=0.001, min_runs=7)
    assert len(runs) == 2 and all(n >= 7 for n in runs)
    runs.clear()
    thread_scaling(lambda: None, threads=[1], min_run_time=0.001, min_runs=1)
    assert runs and all(n < 7 for n in runs)  # one block of >= 1 ms fills 1 ms: no extra blocks


def test_thread_sweep_always_measures_one_thread_first(restore_threads):
    result = thread_scaling(lambda: None, threads=[2], min_run_time=0.01)
    assert result.threads == (1, 2)


def test_thread_sweep_stops_when_the_time_budget_is_spent(restore_threads):
    result = thread_scaling(lambda: None, threads=[1, 2, 3], min_run_time=0.01, time_budget_s=1e-9)
    assert result.threads == (1,)  # the baseline is always measured
    assert result.skipped == (2, 3)
    assert torch.get_num_threads() == restore_threads


@pytest.mark.parametrize("fail_at", [1, 2])
def test_thread_sweep_restores_the_thread_count_on_error(restore_threads, fail_at):
    torch.set_num_threads(3)  # a count that none of the sweep's settings leaves behind by accident

    def work():
        if torch.get_num_threads() == fail_at:
            raise RuntimeError("boom")

    with pytest.raises(RuntimeError, match="boom"):
        thread_scaling(work, threads=[1, 2], min_run_time=0.01)
    assert torch.get_num_threads() == 3


def test_thread_scaling_fit_uses_its_speedups():
    result = threads.ThreadScaling(threads=(1, 2, 4), median_s=(1.0, 0.6, 0.4), iqr_s=(0, 0, 0))
    assert result.speedups == pytest.approx((1.0, 1 / 0.6, 2.5))
    # 1.0 s on one thread, 0.625 s on two: speed-up 1.6, so p = 2 (1 - 1/1.6) = 0.75
    two = threads.ThreadScaling(threads=(1, 2), median_s=(1.0, 0.625), iqr_s=(0, 0))
    assert two.fit().parallel_fraction == pytest.approx(0.75)
    with pytest.raises(ValueError, match="worker count > 1"):
        threads.ThreadScaling(threads=(1,), median_s=(1.0,), iqr_s=(0.0,)).fit()


def test_the_calculator_re_exports_no_measuring_name():
    """The sweep lives in the measuring layer only (lab_utils.threads): a calculator never hands
    out a name from a layer above it."""
    for name in ("thread_scaling", "torch_threads", "ThreadScaling"):
        assert not hasattr(parallel, name)


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        ({"threads": [0]}, ValueError, r"threads\[0\]=0"),
        ({"threads": [1.5]}, TypeError, "threads"),
        ({"threads": "12"}, TypeError, "threads.*sequence"),
        ({"time_budget_s": 0}, ValueError, "time_budget_s"),
        ({"time_budget_s": float("nan")}, ValueError, "time_budget_s"),
        ({"time_budget_s": "1"}, TypeError, "time_budget_s"),
        ({"min_run_time": 0}, ValueError, "min_run_time"),
    ],
)
def test_thread_sweep_refuses_bad_input(restore_threads, kwargs, error, match):
    with pytest.raises(error, match=match):
        thread_scaling(lambda: None, **kwargs)
    assert torch.get_num_threads() == restore_threads


def test_thread_sweep_refuses_a_non_callable(restore_threads):
    with pytest.raises(TypeError, match="fn"):
        thread_scaling(42, threads=[1])
    assert torch.get_num_threads() == restore_threads


def test_torch_threads_sets_and_restores_the_count(restore_threads):
    torch.set_num_threads(3)
    with threads.torch_threads(1) as n:
        assert n == 1 and torch.get_num_threads() == 1
    assert torch.get_num_threads() == 3
    with pytest.raises(KeyError):
        with threads.torch_threads(2):
            raise KeyError("inside")
    assert torch.get_num_threads() == 3


def test_torch_threads_refuses_bad_counts(restore_threads):
    with pytest.raises(ValueError, match="threads=0"):
        with threads.torch_threads(0):
            pass
    with pytest.raises(TypeError, match="threads"):
        with threads.torch_threads(1.0):
            pass
    assert torch.get_num_threads() == restore_threads
