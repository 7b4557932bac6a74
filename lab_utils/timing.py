"""Honest timing on the CPU and on a GPU, built on ``torch.utils.benchmark``.

``torch.utils.benchmark.Timer`` already does the careful parts (warm-up, choosing how many
calls to time together, medians over blocks); ``measure`` adds three course rules: use all of
torch's threads (the Timer defaults to one), synchronize the chosen device before every clock
read, and return a small result with units in its names.
"""

from __future__ import annotations

import math
import timeit
from dataclasses import dataclass

from lab_utils import machine
from lab_utils.units import format_seconds


@dataclass(frozen=True)
class Timing:
    """Seconds per call of one timed function.

    ``runs`` is the number of timed blocks behind the median and the IQR; each block
    timed ``calls_per_run`` calls back to back and counts their mean.
    """

    median_s: float
    iqr_s: float
    runs: int
    calls_per_run: int
    device: str

    def __str__(self) -> str:
        return (
            f"{format_seconds(self.median_s)} per call (median; IQR {format_seconds(self.iqr_s)}, "
            f"{self.runs} runs x {self.calls_per_run} calls on {self.device})"
        )


def measure(fn, *, device=None, min_run_time: float = 0.2) -> Timing:
    """Time ``fn()`` for at least ``min_run_time`` seconds and return its median and IQR.

    ``device``: where ``fn`` queues its work (None: ``machine.pick_device()``); it is
    synchronized before every clock read, so asynchronous GPU work is counted in full.
    All of torch's intra-op threads are used (``torch.get_num_threads()``).
    """
    import torch.utils.benchmark as benchmark
    import torch

    if not callable(fn):
        raise TypeError(f"fn must be callable with no arguments, got {type(fn).__name__}")
    if isinstance(min_run_time, bool) or not isinstance(min_run_time, (int, float)):
        raise TypeError(f"min_run_time must be a number of seconds, got {type(min_run_time).__name__}")
    if not (math.isfinite(min_run_time) and min_run_time > 0):
        raise ValueError(f"min_run_time={min_run_time!r}: must be a finite number of seconds > 0")
    device = machine.as_device(device)

    def synchronized_clock() -> float:
        machine.synchronize(device)
        return timeit.default_timer()

    timer = benchmark.Timer(
        stmt="fn()",
        globals={"fn": fn},
        timer=synchronized_clock,
        num_threads=torch.get_num_threads(),
    )
    measurement = timer.blocked_autorange(min_run_time=min_run_time)
    return Timing(
        median_s=measurement.median,
        iqr_s=measurement.iqr,
        runs=len(measurement.times),
        calls_per_run=measurement.number_per_run,
        device=str(device),
    )
