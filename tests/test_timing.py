"""timing.measure: seconds per call, synchronizes, uses all threads, refuses bad input."""

import time

import pytest
import torch

from alternating import median_ratio
from lab_utils import machine, timing


def perf_counter_seconds_per_call(fn, calls=20):
    """An independent stopwatch: the mean seconds of ``calls`` back-to-back calls."""
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    return (time.perf_counter() - start) / calls


def test_measure_reports_seconds_per_call():
    """A 5 ms sleep: timing.measure's median agrees with a plain perf_counter loop (measured
    alternately, so a busy machine slows both), so the unit is seconds per call."""
    sleep = lambda: time.sleep(0.005)  # noqa: E731
    ratio = median_ratio(lambda: timing.measure(sleep, device="cpu", min_run_time=0.1).median_s,
                         lambda: perf_counter_seconds_per_call(sleep))
    print(f"timing.measure / perf_counter seconds per call, 5 ms sleep: {ratio:.3f}")
    assert 0.5 <= ratio <= 2.0
    result = timing.measure(sleep, device="cpu", min_run_time=0.05)
    assert result.iqr_s >= 0
    assert result.runs >= 1 and result.calls_per_run >= 1
    assert result.device == "cpu"
    assert "per call" in str(result)


def test_measure_synchronizes_the_device_at_every_clock_read(monkeypatch):
    synchronized = []
    real_synchronize = machine.synchronize
    monkeypatch.setattr(machine, "synchronize", lambda device: synchronized.append(str(device)) or real_synchronize(device))
    result = timing.measure(lambda: None, device="cpu", min_run_time=0.01)
    assert synchronized and set(synchronized) == {"cpu"}
    assert len(synchronized) >= 2 * result.runs  # a clock read before and after every timed block


def test_measure_uses_all_torch_threads(monkeypatch):
    seen = []
    monkeypatch.setattr(torch, "set_num_threads", lambda n, real=torch.set_num_threads: seen.append(n) or real(n))
    timing.measure(lambda: None, device="cpu", min_run_time=0.01)
    assert seen and set(seen) == {torch.get_num_threads()}


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        ({"fn": 42}, TypeError, "fn"),
        ({"min_run_time": 0}, ValueError, "min_run_time"),
        ({"min_run_time": -1.0}, ValueError, "min_run_time"),
        ({"min_run_time": float("nan")}, ValueError, "min_run_time"),
        ({"min_run_time": "1"}, TypeError, "min_run_time"),
        ({"min_run_time": True}, TypeError, "min_run_time"),
        ({"device": "tpu9"}, ValueError, "device"),
    ],
)
def test_measure_refuses_bad_input(kwargs, error, match):
    arguments = {"fn": lambda: None, "device": "cpu", "min_run_time": 0.01, **kwargs}
    fn = arguments.pop("fn")
    with pytest.raises(error, match=match):
        timing.measure(fn, **arguments)
