"""Honest timing on the CPU and on a GPU, built on ``torch.utils.benchmark``.

``measure`` follows the rules a GPU needs: warm up with a few synchronized calls first (the
first call of a kernel pays for library handles and kernel loading), synchronize the device
before every clock read (the benchmark ``Timer``'s clock is a synchronized clock), time blocks
of calls long enough to hide the clock and synchronize overheads (``blocked_autorange`` sizes
them), and time enough blocks (at least ``min_runs``) for a real spread. It returns a small
result with units in its names that says how many blocks it rests on.
"""

from __future__ import annotations

import math
import timeit
from dataclasses import dataclass

from lab_utils import checks, machine
from lab_utils.units import format_seconds

_clock = timeit.default_timer  # seconds; a module attribute so that tests can drive a fake clock
_WARMUP_CALLS = 3


@dataclass(frozen=True)
class Timing:
    """Seconds per call of one timed function.

    ``runs`` is the number of timed blocks behind the median and the IQR; each block
    timed ``calls_per_run`` calls back to back and counts their mean. ``warmup_calls``
    calls ran (synchronized, untimed) before the first block.
    """

    median_s: float
    iqr_s: float
    runs: int
    calls_per_run: int
    device: str
    warmup_calls: int = 0

    def __str__(self) -> str:
        return (
            f"{format_seconds(self.median_s)} per call (median; IQR {format_seconds(self.iqr_s)}, "
            f"{self.runs} runs x {self.calls_per_run} calls on {self.device}, "
            f"after {self.warmup_calls} warm-up calls)"
        )


def predicted_seconds(call_s: float, min_run_time: float = 0.2, min_runs: int = 5) -> float:
    """About how long :func:`measure` takes for calls of ``call_s`` seconds: the warm-up calls,
    ``blocked_autorange``'s block-size search (about one block), then blocks until both
    ``min_run_time`` and ``min_runs`` blocks are done."""
    call_s = checks.number("call_s", call_s)
    warmup_s = call_s * (_WARMUP_CALLS if call_s < min_run_time else 2)
    return warmup_s + call_s + max(min_run_time, min_runs * call_s)


def _warm_up(fn, device, min_run_time: float) -> int:
    """Synchronized, untimed calls before timing: the first (cold) one, then more until
    :data:`_WARMUP_CALLS` calls or ``min_run_time`` seconds. Returns the number of calls."""
    machine.synchronize(device)
    start = _clock()
    calls = 0
    while calls < _WARMUP_CALLS:
        fn()
        machine.synchronize(device)
        calls += 1
        if calls >= 2 and _clock() - start >= min_run_time:
            break
        if calls == 1:
            start = _clock()  # the cold call does not count towards the warm-up time
    return calls


def measure(fn, *, device=None, min_run_time: float = 0.2, min_runs: int = 5,
            threads: int | None = None) -> Timing:
    """Time ``fn()`` for at least ``min_run_time`` seconds and ``min_runs`` blocks; return the
    median seconds per call and the IQR over blocks.

    ``device``: where ``fn`` queues its work (None: ``machine.pick_device()``); it is
    synchronized before every clock read, so asynchronous GPU work is counted in full.
    Warm-up calls run first (:func:`_warm_up`); then ``torch.utils.benchmark.Timer``'s
    ``blocked_autorange`` sizes and times blocks of calls, and blocks of that size follow
    until ``min_runs`` blocks are done.
    ``threads``: torch's intra-op threads while timing (None: ``torch.get_num_threads()``).
    """
    import torch
    import torch.utils.benchmark as benchmark

    if not callable(fn):
        raise TypeError(f"fn must be callable with no arguments, got {type(fn).__name__}")
    if isinstance(min_run_time, bool) or not isinstance(min_run_time, (int, float)):
        raise TypeError(f"min_run_time must be a number of seconds, got {type(min_run_time).__name__}")
    if not (math.isfinite(min_run_time) and min_run_time > 0):
        raise ValueError(f"min_run_time={min_run_time!r}: must be a finite number of seconds > 0")
    min_runs = checks.count("min_runs", min_runs)
    threads = torch.get_num_threads() if threads is None else checks.count("threads", threads)
    device = machine.as_device(device)

    def synchronized_clock() -> float:
        machine.synchronize(device)
        return _clock()

    timer = benchmark.Timer(stmt="fn()", globals={"fn": fn}, timer=synchronized_clock, num_threads=threads)
    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        warmup_calls = _warm_up(fn, device, min_run_time)
    finally:
        torch.set_num_threads(before)
    measured = timer.blocked_autorange(min_run_time=min_run_time)
    calls = measured.number_per_run
    blocks_s = list(measured.raw_times)  # seconds of each block of `calls` calls
    torch.set_num_threads(threads)
    try:  # slow calls: more blocks of the same size, without searching for the size again
        while len(blocks_s) < min_runs:
            start = synchronized_clock()
            for _ in range(calls):
                fn()
            blocks_s.append(synchronized_clock() - start)
    finally:
        torch.set_num_threads(before)
    merged = benchmark.Measurement(calls, blocks_s, measured.task_spec, measured.metadata)
    return Timing(
        median_s=merged.median,
        iqr_s=merged.iqr,
        runs=len(merged.times),
        calls_per_run=calls,
        device=str(device),
        warmup_calls=warmup_calls,
    )
