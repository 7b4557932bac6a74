"""Measured thread scaling: one function timed on the CPU with 1, 2, ... torch threads.

:func:`thread_scaling` sweeps thread counts with ``lab_utils.timing.measure`` and returns a
:class:`ThreadScaling` (seconds per call, speed-ups, and Amdahl's fit from
``lab_utils.parallel``); :func:`torch_threads` sets torch's intra-op thread count for a block.
torch is imported lazily, inside the functions.
"""

from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass

from lab_utils import checks
from lab_utils.parallel import AmdahlFit, fit_parallel_fraction

__all__ = ["MANY_CORES", "ThreadScaling", "thread_scaling", "torch_threads"]

MANY_CORES = 8
"""Above this many threads, :func:`thread_scaling` sweeps powers of two (plus the maximum)."""


@dataclass(frozen=True)
class ThreadScaling:
    """One function timed on the CPU with 1, 2, ... torch threads.

    threads: the thread counts measured, ascending, starting at 1; median_s and iqr_s:
    median and interquartile range of the time per call at each; skipped: the thread counts
    left out because the time budget ran out.
    """

    threads: tuple[int, ...]
    median_s: tuple[float, ...]
    iqr_s: tuple[float, ...]
    skipped: tuple[int, ...] = ()

    @property
    def speedups(self) -> tuple[float, ...]:
        """Time on one thread divided by the time on each thread count."""
        return tuple(self.median_s[0] / s for s in self.median_s)

    def fit(self) -> AmdahlFit:
        """Amdahl's parallel fraction fitted to these speed-ups (needs two thread counts)."""
        return fit_parallel_fraction(self.threads, self.speedups)


@contextlib.contextmanager
def torch_threads(threads: int):
    """Run a ``with`` block with torch using ``threads`` intra-op CPU threads; the previous
    count comes back when the block ends, also on error."""
    import torch

    n = checks.count("threads", threads)
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


def thread_scaling(
    fn, *, threads=None, min_run_time: float = 0.1, time_budget_s: float | None = None, min_runs: int = 5
) -> ThreadScaling:
    """Time ``fn()`` on the CPU under ``torch.set_num_threads(n)`` for each ``n`` in ``threads``.

    ``threads``: thread counts to try (1 is always measured first, as the baseline); None:
    1..N for N = ``torch.get_num_threads()`` (powers of two up to N when N > 8).
    Each count is timed with :func:`lab_utils.timing.measure` for ``min_run_time`` seconds and
    at least ``min_runs`` blocks.
    ``time_budget_s``: once this many seconds have passed, no further count is started (the
    rest are listed in ``skipped``). torch's thread count is restored afterwards, also on error.
    """
    import torch

    from lab_utils import timing

    if time_budget_s is not None:
        time_budget_s = checks.number("time_budget_s", time_budget_s)
    available = torch.get_num_threads()
    if threads is None:
        counts = _default_threads(available)
    else:
        counts = [checks.count(f"threads[{i}]", n) for i, n in enumerate(checks.sequence("threads", threads))]
    counts = sorted(set(counts) | {1})

    start = time.perf_counter()
    measured, medians, iqrs = [], [], []
    for n in counts:
        if measured and time_budget_s is not None and time.perf_counter() - start >= time_budget_s:
            break
        with torch_threads(n):
            result = timing.measure(fn, device="cpu", min_run_time=min_run_time, min_runs=min_runs)
        measured.append(n)
        medians.append(result.median_s)
        iqrs.append(result.iqr_s)
    return ThreadScaling(
        threads=tuple(measured),
        median_s=tuple(medians),
        iqr_s=tuple(iqrs),
        skipped=tuple(counts[len(measured) :]),
    )
