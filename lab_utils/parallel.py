"""Parallel speed-up: Amdahl's and Gustafson's laws, fitting a parallel fraction, thread sweeps.

``p`` is the *parallel fraction*: the share of the one-worker run time that can be split
over workers; ``1 - p`` stays serial. Amdahl (1967) fixes the work and asks how much faster
``n`` workers finish it; Gustafson (1988) grows the work with the workers and asks how much
more gets done in the same time.

>>> round(amdahl_speedup(0.95, 8), 3), round(amdahl_limit(0.95), 6)
(5.926, 20.0)
>>> round(gustafson_speedup(0.95, 8), 2)
7.65

The formulas are pure Python; only :func:`torch_threads` and :func:`thread_scaling`, which
set threads and time code, import torch, and they do so lazily.
"""

from __future__ import annotations

import contextlib
import math
import numbers
import time
from collections.abc import Iterable
from dataclasses import dataclass

from lab_utils import checks

__all__ = [
    "AmdahlFit",
    "ThreadScaling",
    "amdahl_limit",
    "amdahl_speedup",
    "fit_parallel_fraction",
    "gustafson_speedup",
    "thread_scaling",
    "torch_threads",
]

MANY_CORES = 8
"""Above this many threads, :func:`thread_scaling` sweeps powers of two (plus the maximum)."""


def _check_fraction(parallel_fraction) -> float:
    return checks.fraction("parallel_fraction", parallel_fraction)


def _check_workers(workers, name: str = "workers") -> int:
    return checks.count(name, workers)


def _as_list(values, name: str) -> list:
    return checks.sequence(name, values)


def amdahl_speedup(parallel_fraction: float, workers: int) -> float:
    """Speed-up of a fixed amount of work on ``workers`` workers: ``1 / ((1 - p) + p / n)``.

    Amdahl, "Validity of the single processor approach...", AFIPS 1967.
    """
    p = _check_fraction(parallel_fraction)
    n = _check_workers(workers)
    return 1.0 / ((1.0 - p) + p / n)


def amdahl_limit(parallel_fraction: float) -> float:
    """The speed-up that no number of workers exceeds: ``1 / (1 - p)`` (``inf`` for p = 1)."""
    p = _check_fraction(parallel_fraction)
    return math.inf if p == 1.0 else 1.0 / (1.0 - p)


def gustafson_speedup(parallel_fraction: float, workers: int) -> float:
    """Scaled speed-up when the work grows with the workers: ``(1 - p) + p * n``.

    Here ``p`` is the parallel share of the run time *on the n workers*; the speed-up
    compares with one worker doing the same, larger job. Gustafson, "Reevaluating
    Amdahl's law", CACM 31(5), 1988.
    """
    p = _check_fraction(parallel_fraction)
    n = _check_workers(workers)
    return (1.0 - p) + p * n


@dataclass(frozen=True)
class AmdahlFit:
    """The parallel fraction that best explains measured speed-ups under Amdahl's law.

    parallel_fraction: the least-squares best ``p`` within [0, 1];
    unconstrained_fraction: the same estimate before it is held to [0, 1] (below 0: more
    workers made it slower; above 1: super-linear, e.g. more cache; Amdahl's law fits neither);
    rms_speedup_error: root mean square of measured minus fitted speed-up;
    points: how many (workers, speed-up) pairs went in.
    """

    parallel_fraction: float
    unconstrained_fraction: float
    rms_speedup_error: float
    points: int

    def speedup(self, workers: int) -> float:
        """Amdahl's speed-up on ``workers`` workers with the fitted fraction."""
        return amdahl_speedup(self.parallel_fraction, workers)

    @property
    def limit(self) -> float:
        """The fitted fraction's ceiling, ``1 / (1 - p)``."""
        return amdahl_limit(self.parallel_fraction)


def fit_parallel_fraction(workers: Iterable[int], speedups: Iterable[float]) -> AmdahlFit:
    """Fit Amdahl's ``p`` to measured ``(workers, speed-up)`` pairs, in closed form.

    Amdahl's law is linear in ``p`` when written for time: ``T_n / T_1 = 1 / S_n =
    1 - p * (1 - 1/n)``. With ``x = 1 - 1/n`` and ``y = 1 / S``, least squares on
    ``1 - y = p * x`` gives ``p = sum(x * (1 - y)) / sum(x * x)``; the best ``p`` in [0, 1]
    is that value clipped (the error is quadratic in ``p``). Needs one pair with ``n > 1``.
    """
    workers = _as_list(workers, "workers")
    speedups = _as_list(speedups, "speedups")
    if len(workers) != len(speedups):
        raise ValueError(
            f"workers has {len(workers)} values and speedups {len(speedups)}: give one speed-up per worker count"
        )
    ns = [_check_workers(n, "workers[]") for n in workers]
    for s in speedups:
        if isinstance(s, bool) or not isinstance(s, numbers.Real):
            raise TypeError(f"speedups must hold numbers, got {type(s).__name__} {s!r}")
        if not (math.isfinite(s) and s > 0):
            raise ValueError(f"speedups holds {s!r}: every speed-up must be a finite number > 0")
    if not any(n > 1 for n in ns):
        raise ValueError(f"workers={ns!r}: need at least one worker count > 1 to fit a parallel fraction")

    xs = [1.0 - 1.0 / n for n in ns]
    ys = [1.0 / s for s in speedups]
    raw = sum(x * (1.0 - y) for x, y in zip(xs, ys)) / sum(x * x for x in xs)
    p = min(1.0, max(0.0, raw))
    fitted = [amdahl_speedup(p, n) for n in ns]
    rms = math.sqrt(sum((s - f) ** 2 for s, f in zip(speedups, fitted)) / len(ns))
    return AmdahlFit(parallel_fraction=p, unconstrained_fraction=raw, rms_speedup_error=rms, points=len(ns))


@dataclass(frozen=True)
class ThreadScaling:
    """One function timed on the CPU with 1, 2, ... torch threads.

    threads: the thread counts measured, ascending, starting at 1; seconds and iqr_seconds:
    median and interquartile range of the time per call at each; skipped: the thread counts
    left out because the time budget ran out.
    """

    threads: tuple[int, ...]
    seconds: tuple[float, ...]
    iqr_seconds: tuple[float, ...]
    skipped: tuple[int, ...] = ()

    @property
    def speedups(self) -> tuple[float, ...]:
        """Time on one thread divided by the time on each thread count."""
        return tuple(self.seconds[0] / s for s in self.seconds)

    def fit(self) -> AmdahlFit:
        """Amdahl's parallel fraction fitted to these speed-ups (needs two thread counts)."""
        return fit_parallel_fraction(self.threads, self.speedups)


@contextlib.contextmanager
def torch_threads(threads: int):
    """Run a ``with`` block with torch using ``threads`` intra-op CPU threads; the previous
    count comes back when the block ends, also on error."""
    import torch

    n = _check_workers(threads, "threads")
    original = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        yield n
    finally:
        torch.set_num_threads(original)


def _default_threads(max_threads: int) -> list[int]:
    """1..N for up to MANY_CORES threads; beyond, powers of two and N itself."""
    if max_threads <= MANY_CORES:
        return list(range(1, max_threads + 1))
    counts = [2**k for k in range(max_threads.bit_length()) if 2**k < max_threads]
    return counts + [max_threads]


def thread_scaling(fn, *, threads=None, min_run_time: float = 0.1, time_budget_s: float | None = None) -> ThreadScaling:
    """Time ``fn()`` on the CPU under ``torch.set_num_threads(n)`` for each ``n`` in ``threads``.

    ``threads``: thread counts to try (1 is always measured first, as the baseline); None:
    1..N for N = ``torch.get_num_threads()`` (powers of two up to N when N > 8).
    Each count is timed with :func:`lab_utils.timing.measure` for ``min_run_time`` seconds.
    ``time_budget_s``: once this many seconds have passed, no further count is started (the
    rest are listed in ``skipped``). torch's thread count is restored afterwards, also on error.
    """
    import torch

    from lab_utils import timing

    if time_budget_s is not None:
        if isinstance(time_budget_s, bool) or not isinstance(time_budget_s, numbers.Real):
            raise TypeError(
                f"time_budget_s must be None or a number of seconds, got {type(time_budget_s).__name__}"
            )
        if not (math.isfinite(time_budget_s) and time_budget_s > 0):
            raise ValueError(f"time_budget_s={time_budget_s!r}: must be None or a finite number of seconds > 0")
    available = torch.get_num_threads()
    if threads is None:
        counts = _default_threads(available)
    else:
        counts = [_check_workers(n, "threads[]") for n in _as_list(threads, "threads")]
    counts = sorted(set(counts) | {1})

    start = time.perf_counter()
    measured, medians, iqrs = [], [], []
    for n in counts:
        if measured and time_budget_s is not None and time.perf_counter() - start >= time_budget_s:
            break
        with torch_threads(n):
            result = timing.measure(fn, device="cpu", min_run_time=min_run_time)
        measured.append(n)
        medians.append(result.median_s)
        iqrs.append(result.iqr_s)
    return ThreadScaling(
        threads=tuple(measured),
        seconds=tuple(medians),
        iqr_seconds=tuple(iqrs),
        skipped=tuple(counts[len(measured):]),
    )
