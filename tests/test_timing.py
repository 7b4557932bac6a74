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


@pytest.mark.timing
def test_measure_reports_seconds_per_call():
    """A 5 ms sleep: timing.measure's median agrees with a plain perf_counter loop (measured
    alternately, so a busy machine slows both), so the unit is seconds per call."""
    sleep = lambda: time.sleep(0.005)  # noqa: E731
    ratio = median_ratio(
        lambda: timing.measure(sleep, device="cpu", min_run_time=0.1).median_s,
        lambda: perf_counter_seconds_per_call(sleep),
    )
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
    monkeypatch.setattr(
        machine, "synchronize", lambda device: synchronized.append(str(device)) or real_synchronize(device)
    )
    result = timing.measure(lambda: None, device="cpu", min_run_time=0.01)
    assert synchronized and set(synchronized) == {"cpu"}
    assert len(synchronized) >= 2 * result.runs  # a clock read before and after every timed block


def test_measure_uses_torch_threads_and_restores_them():
    outside = torch.get_num_threads()
    seen = []
    timing.measure(lambda: seen.append(torch.get_num_threads()), device="cpu", min_run_time=0.01)
    assert set(seen) == {outside}  # by default: all of torch's threads, as set
    seen.clear()
    timing.measure(lambda: seen.append(torch.get_num_threads()), device="cpu", min_run_time=0.01, threads=1)
    assert set(seen) == {1}
    assert torch.get_num_threads() == outside


class FakeClock:
    """A clock that only the timed function moves: the first call costs ``cold_s``, every
    later one ``warm_s``. Timing with it is exact, so the arithmetic can be checked by hand."""

    def __init__(self, cold_s, warm_s):
        self.now, self.calls, self.cold_s, self.warm_s = 0.0, 0, cold_s, warm_s

    def __call__(self):
        return self.now

    def call(self):
        self.now += self.cold_s if self.calls == 0 else self.warm_s
        self.calls += 1


def test_a_cold_first_call_is_warmed_up_and_never_timed(monkeypatch):
    """Item 1 of issue 18: a first call (cuBLAS handle, kernel loading) far longer than
    min_run_time is a warm-up, not a block; at least five blocks follow."""
    clock = FakeClock(cold_s=5.0, warm_s=0.002)
    monkeypatch.setattr(timing, "_clock", clock)
    result = timing.measure(clock.call, device="cpu", min_run_time=0.1)
    assert result.median_s == pytest.approx(0.002) and result.iqr_s == pytest.approx(0.0, abs=1e-12)
    assert result.warmup_calls == 3
    # blocks of 2 ms calls sized from the warm-up fill min_run_time: at least 0.1 s / 2 ms calls
    assert result.runs * result.calls_per_run >= 0.1 / 0.002 - 1 and result.runs >= 5
    assert f"{result.runs} runs x {result.calls_per_run} calls" in str(result) and "3 warm-up calls" in str(
        result
    )


def test_slow_calls_still_get_min_runs_blocks(monkeypatch):
    clock = FakeClock(cold_s=1.0, warm_s=1.0)  # each call longer than min_run_time
    monkeypatch.setattr(timing, "_clock", clock)
    result = timing.measure(clock.call, device="cpu", min_run_time=0.2, min_runs=5)
    assert (result.runs, result.calls_per_run) == (5, 1)
    assert result.warmup_calls == 2  # the second warm-up call already took min_run_time
    assert result.median_s == pytest.approx(1.0)


def test_measure_synchronizes_a_patched_cuda_device(monkeypatch):
    """The CUDA path without a GPU: the benchmark timer's clock synchronizes 'cuda' before every read."""
    clock, synchronized, reads = FakeClock(cold_s=0.01, warm_s=0.001), [], []
    monkeypatch.setattr(torch.cuda, "synchronize", lambda device=None: synchronized.append(str(device)))
    monkeypatch.setattr(timing, "_clock", lambda: reads.append(len(synchronized)) or clock())
    result = timing.measure(clock.call, device="cuda", min_run_time=0.01)
    assert set(synchronized) == {"cuda"}
    assert reads[0] > 0 and all(
        later > earlier for earlier, later in zip(reads, reads[1:])
    )  # a sync per read
    assert len(reads) >= 2 * result.runs and result.device == "cuda"


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
        ({"min_runs": 0}, ValueError, "min_runs"),
        ({"threads": 0}, ValueError, "threads"),
        ({"threads": 1.5}, TypeError, "threads"),
    ],
)
def test_measure_refuses_bad_input(kwargs, error, match):
    arguments = {"fn": lambda: None, "device": "cpu", "min_run_time": 0.01, **kwargs}
    fn = arguments.pop("fn")
    with pytest.raises(error, match=match):
        timing.measure(fn, **arguments)


def test_a_call_quicker_than_a_clock_read_gets_blocks_of_bounded_size(monkeypatch):
    """A slow clock (each read 1 µs, as a GPU's synchronize can be slower still) and calls of
    10 ns: the warm-up sees mostly the clock, the first block is far too short and the block is
    sized again from it; the blocks then add up to about min_run_time (a block size computed
    from a call time of zero once asked for 10^10 calls)."""
    state = {"now": 0.0}

    def slow_clock():
        state["now"] += 1e-6
        return state["now"]

    def call():
        state["now"] += 1e-8

    monkeypatch.setattr(timing, "_clock", slow_clock)
    result = timing.measure(call, device="cpu", min_run_time=0.01, min_runs=3)
    assert result.runs >= 3 and result.calls_per_run * result.runs <= 2 * 10**6
    assert result.median_s == pytest.approx(1e-8, rel=0.01)
    assert state["now"] == pytest.approx(0.01, rel=0.5)
