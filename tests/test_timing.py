"""timing.measure: agrees with torch.utils.benchmark, synchronizes, refuses bad input."""

import time

import pytest
import torch
import torch.utils.benchmark as benchmark

from alternating import median_ratio
from lab_utils import machine, timing


def test_measure_agrees_with_torch_benchmark_on_a_matmul():
    """Medians of timing.measure and of a direct Timer, measured alternately, within 0.75-1.33."""
    a = torch.randn(1024, 1024)
    b = torch.randn(1024, 1024)
    direct = benchmark.Timer(stmt="a @ b", globals={"a": a, "b": b}, num_threads=torch.get_num_threads())
    ratio = median_ratio(
        lambda: timing.measure(lambda: a @ b, device="cpu").median_s,
        lambda: direct.blocked_autorange(min_run_time=0.2).median,
    )
    print(f"timing.measure / torch.utils.benchmark median ratio: {ratio:.3f}")
    assert 0.75 <= ratio <= 1.33


def test_measure_reports_seconds_per_call():
    """A 5 ms sleep measures as milliseconds, not as microseconds or seconds."""
    result = timing.measure(lambda: time.sleep(0.005), device="cpu", min_run_time=0.1)
    assert 0.004 <= result.median_s <= 0.05
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
