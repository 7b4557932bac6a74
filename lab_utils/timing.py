"""Honest timing on the CPU and on a GPU, with ``torch.utils.benchmark``'s statistics.

``measure`` follows the rules a GPU needs: warm up with a few synchronized calls first (the
first call of a kernel pays for library handles and kernel loading), synchronize the device
before every clock read, time blocks
of calls long enough to hide the clock and synchronize overheads (at least
:data:`_BLOCK_OVERHEADS` times one clock read), and time enough blocks (at least ``min_runs``)
for a real spread. It returns a small result with units in its names that says how many blocks
it rests on.

Why not ``Timer.blocked_autorange``: it grows blocks by powers of ten until the clock's overhead
is 1/10,000 of a block, so a 1 ms call got blocks of 100 calls and ``measure`` took about 0.4 s
when asked for 0.01 s (measured here, 2026-12); and ``Timer.timeit`` adds at least two warm-up
calls to every block, tripling a slow call's cost. Blocks sized from the warm-up calls take about
``min_run_time`` in all; their median and IQR are ``torch.utils.benchmark.Measurement``'s.
"""

from __future__ import annotations

import math
import timeit
from dataclasses import dataclass

from lab_utils import checks, machine
from lab_utils.units import format_seconds

_clock = timeit.default_timer  # seconds; a module attribute so that tests can drive a fake clock
_WARMUP_CALLS = 3
_BLOCK_OVERHEADS = 1000  # a block lasts at least this many clock reads: the clock costs <= 0.1% of it


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
    then blocks until both ``min_run_time`` and ``min_runs`` blocks are done."""
    call_s = checks.number("call_s", call_s)
    warmup_s = call_s * (_WARMUP_CALLS if call_s < min_run_time else 2)
    return warmup_s + max(min_run_time, min_runs * call_s)


def _warm_up(fn, min_run_time: float, clock) -> tuple[int, float]:
    """Synchronized, untimed calls before timing: the first (cold) one, then more until
    :data:`_WARMUP_CALLS` calls or ``min_run_time`` seconds. Returns the number of calls and the
    mean seconds of the warm ones (``clock`` synchronizes before it reads)."""
    start = clock()
    calls = 0
    while calls < _WARMUP_CALLS:
        fn()
        calls += 1
        if calls == 1:
            start = clock()  # the cold call does not count
        elif clock() - start >= min_run_time:
            break
    return calls, (clock() - start) / (calls - 1)


def _time_block(fn, calls: int, clock) -> float:
    """Seconds of ``calls`` back-to-back calls of ``fn`` between two reads of ``clock`` (one
    block; ``Timer.timeit`` would add ``max(calls // 100, 2)`` warm-up calls to every block)."""
    start = clock()
    for _ in range(calls):
        fn()
    return clock() - start


def _block_seconds(clock_s: float, min_run_time: float, min_runs: int) -> float:
    """How long each timed block should last: ``min_run_time / min_runs``, and at least
    :data:`_BLOCK_OVERHEADS` clock reads of ``clock_s`` seconds.

    >>> _block_seconds(clock_s=1e-6, min_run_time=0.03, min_runs=3)
    0.01
    >>> _block_seconds(clock_s=1e-5, min_run_time=0.01, min_runs=3)  # a slow clock (a GPU's synchronize)
    0.01
    """
    return max(min_run_time / min_runs, _BLOCK_OVERHEADS * clock_s)


def _calls_per_block(block_s: float, call_s: float) -> int:
    """Calls of ``call_s`` seconds that fill a block of ``block_s`` seconds (at least one).

    >>> _calls_per_block(0.01, 0.001), _calls_per_block(0.01, 0.5)
    (10, 1)
    >>> _calls_per_block(0.01, 0.0)  # a warm-up too quick to see: bounded, sized again from the first block
    10000000
    """
    return max(1, math.ceil(block_s / max(call_s, 1e-9)))  # no call of Python code takes under 1 ns


def measure(
    fn, *, device=None, min_run_time: float = 0.2, min_runs: int = 5, threads: int | None = None
) -> Timing:
    """Time ``fn()`` for at least ``min_run_time`` seconds and ``min_runs`` blocks; return the
    median seconds per call and the IQR over blocks.

    ``device``: where ``fn`` queues its work (None: ``machine.pick_device()``); it is
    synchronized before every clock read, so asynchronous GPU work is counted in full.
    Warm-up calls run first (:func:`_warm_up`) and give the block size (:func:`_block_seconds`);
    then blocks of that many calls are timed (:func:`_time_block`) until there are ``min_runs``
    of them and they add up to ``min_run_time``; ``torch.utils.benchmark.Measurement`` gives
    their median and IQR.
    ``threads``: torch's intra-op threads while timing (None: ``torch.get_num_threads()``).
    """
    import torch
    import torch.utils.benchmark as benchmark
    from torch.utils.benchmark.utils.common import TaskSpec

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

    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        warmup_calls, call_s = _warm_up(fn, min_run_time, synchronized_clock)
        reads_start = synchronized_clock()
        for _ in range(9):
            synchronized_clock()
        clock_s = (synchronized_clock() - reads_start) / 10
        block_s = _block_seconds(clock_s, min_run_time, min_runs)
        calls = _calls_per_block(
            block_s, call_s
        )  # too few when the warm-up's clock reads dominate: see below
        blocks_s = [_time_block(fn, calls, synchronized_clock)]
        if blocks_s[0] < block_s / 2:  # a call far quicker than the warm-up said: size again, drop it
            calls = _calls_per_block(block_s, blocks_s[0] / calls)
            blocks_s = [_time_block(fn, calls, synchronized_clock)]
        while len(blocks_s) < min_runs or sum(blocks_s) < min_run_time:
            blocks_s.append(_time_block(fn, calls, synchronized_clock))
    finally:
        torch.set_num_threads(before)
    merged = benchmark.Measurement(calls, blocks_s, TaskSpec(stmt="fn()", setup="pass", num_threads=threads))
    return Timing(
        median_s=merged.median,
        iqr_s=merged.iqr,
        runs=len(merged.times),
        calls_per_run=calls,
        device=str(device),
        warmup_calls=warmup_calls,
    )
