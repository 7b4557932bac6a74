"""Honest timing on the CPU and on a GPU.

``measure`` follows the rules a GPU needs: warm up with a few synchronized calls first (the
first call of a kernel pays for library handles and kernel loading), synchronize the device
before every clock read, time blocks of calls long enough to hide the clock and synchronize
overheads, and time enough blocks (at least ``min_runs``) for a real spread. It returns a
small result with units in its names that says how many blocks it rests on.
"""

from __future__ import annotations

import contextlib
import math
import statistics
import timeit
from dataclasses import dataclass

from lab_utils import checks, machine
from lab_utils.units import format_seconds

_clock = timeit.default_timer  # seconds; a module attribute so that tests can drive a fake clock
_MIN_BLOCK_S = 1e-3  # a block of calls lasts at least this long: synchronize and clock cost ~10 us
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


def _block_s(min_run_time: float, min_runs: int) -> float:
    """Seconds a block of calls should last."""
    return max(min_run_time / (2 * min_runs), _MIN_BLOCK_S)


def predicted_seconds(call_s: float, min_run_time: float = 0.2, min_runs: int = 5) -> float:
    """About how long :func:`measure` takes for calls of ``call_s`` seconds: the warm-up calls,
    then blocks until both ``min_run_time`` and ``min_runs`` blocks are done."""
    call_s = checks.number("call_s", call_s)
    warmup_s = call_s * (_WARMUP_CALLS if call_s < min_run_time else 2)
    block_s = max(call_s, _block_s(min_run_time, min_runs))
    return warmup_s + max(min_run_time, min_runs * block_s)


@contextlib.contextmanager
def _torch_threads(threads: int | None):
    """torch's intra-op thread count set to ``threads`` inside the block (None: left as is)."""
    import torch

    before = torch.get_num_threads()
    if threads is None or threads == before:
        yield
        return
    torch.set_num_threads(threads)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def measure(fn, *, device=None, min_run_time: float = 0.2, min_runs: int = 5,
            threads: int | None = None) -> Timing:
    """Time ``fn()`` for at least ``min_run_time`` seconds and ``min_runs`` blocks; return the
    median seconds per call and the IQR over blocks.

    ``device``: where ``fn`` queues its work (None: ``machine.pick_device()``); it is
    synchronized before every clock read, so asynchronous GPU work is counted in full.
    Up to three synchronized warm-up calls run first; the fastest of those after the first
    sets how many calls a block holds (enough for ``min_run_time / (2 min_runs)``, at least
    1 ms; the nearest whole number of calls). ``threads``: torch's intra-op threads while timing (None: ``torch.get_num_threads()``).
    """
    if not callable(fn):
        raise TypeError(f"fn must be callable with no arguments, got {type(fn).__name__}")
    if isinstance(min_run_time, bool) or not isinstance(min_run_time, (int, float)):
        raise TypeError(f"min_run_time must be a number of seconds, got {type(min_run_time).__name__}")
    if not (math.isfinite(min_run_time) and min_run_time > 0):
        raise ValueError(f"min_run_time={min_run_time!r}: must be a finite number of seconds > 0")
    min_runs = checks.count("min_runs", min_runs)
    if threads is not None:
        threads = checks.count("threads", threads)
    device = machine.as_device(device)

    def timed_block(calls: int) -> float:
        machine.synchronize(device)
        start = _clock()
        for _ in range(calls):
            fn()
        machine.synchronize(device)
        return _clock() - start

    with _torch_threads(threads):
        timed_block(1)  # cold: library handles, kernel loading, first-touch of memory
        warm = [timed_block(1)]
        while len(warm) + 1 < _WARMUP_CALLS and sum(warm) < min_run_time:
            warm.append(timed_block(1))
        call_s = max(min(warm), 1e-9)
        calls = max(1, round(_block_s(min_run_time, min_runs) / call_s))
        times, spent = [], 0.0
        while len(times) < min_runs or spent < min_run_time:
            seconds = timed_block(calls)
            spent += seconds
            times.append(seconds / calls)
    quartiles = statistics.quantiles(times, n=4, method="inclusive") if len(times) > 1 else [times[0]] * 3
    return Timing(
        median_s=statistics.median(times),
        iqr_s=quartiles[2] - quartiles[0],
        runs=len(times),
        calls_per_run=calls,
        device=str(device),
        warmup_calls=1 + len(warm),
    )
