"""Parallel speed-up: Amdahl's and Gustafson's laws, fitting a parallel fraction, thread sweeps.

``p`` is the *parallel fraction*: the share of the one-worker run time that can be split
over workers; ``1 - p`` stays serial. Amdahl (1967) fixes the work and asks how much faster
``n`` workers finish it; Gustafson (1988) grows the work with the workers and asks how much
more gets done in the same time.

>>> round(amdahl_speedup(0.95, 8), 3), round(amdahl_limit(0.95), 6)
(5.926, 20.0)
>>> round(gustafson_speedup(0.95, 8), 2)
7.65

Pure arithmetic: no torch, no clock. Measuring a thread sweep is ``lab_utils.threads``
(``torch_threads``, ``thread_scaling``, ``ThreadScaling``): import it where a cell measures.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

from lab_utils import checks

__all__ = [
    "AmdahlFit",
    "amdahl_limit",
    "amdahl_speedup",
    "fit_parallel_fraction",
    "gustafson_speedup",
]


def amdahl_speedup(parallel_fraction: float, workers: int) -> float:
    """Speed-up of a fixed amount of work on ``workers`` workers: ``1 / ((1 - p) + p / n)``.

    Amdahl, "Validity of the single processor approach...", AFIPS 1967.
    """
    p = checks.fraction("parallel_fraction", parallel_fraction)
    n = checks.count("workers", workers)
    return 1.0 / ((1.0 - p) + p / n)


def amdahl_limit(parallel_fraction: float) -> float:
    """The speed-up that no number of workers exceeds: ``1 / (1 - p)`` (``inf`` for p = 1)."""
    p = checks.fraction("parallel_fraction", parallel_fraction)
    return math.inf if p == 1.0 else 1.0 / (1.0 - p)


def gustafson_speedup(parallel_fraction: float, workers: int) -> float:
    """Scaled speed-up when the work grows with the workers: ``(1 - p) + p * n``.

    Here ``p`` is the parallel share of the run time *on the n workers*; the speed-up
    compares with one worker doing the same, larger job. Gustafson, "Reevaluating
    Amdahl's law", CACM 31(5), 1988.
    """
    p = checks.fraction("parallel_fraction", parallel_fraction)
    n = checks.count("workers", workers)
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
    workers = checks.sequence("workers", workers)
    speedups = checks.sequence("speedups", speedups)
    if len(workers) != len(speedups):
        raise ValueError(
            f"workers has {len(workers)} values and speedups {len(speedups)}: "
            "give one speed-up per worker count"
        )
    ns = [checks.count(f"workers[{i}]", n) for i, n in enumerate(workers)]
    speedups = checks.numbers("speedups", speedups)
    if not any(n > 1 for n in ns):
        raise ValueError(f"workers={ns!r}: need at least one worker count > 1 to fit a parallel fraction")

    xs = [1.0 - 1.0 / n for n in ns]
    ys = [1.0 / s for s in speedups]
    raw = sum(x * (1.0 - y) for x, y in zip(xs, ys)) / sum(x * x for x in xs)
    p = min(1.0, max(0.0, raw))
    fitted = [amdahl_speedup(p, n) for n in ns]
    rms = math.sqrt(sum((s - f) ** 2 for s, f in zip(speedups, fitted)) / len(ns))
    return AmdahlFit(parallel_fraction=p, unconstrained_fraction=raw, rms_speedup_error=rms, points=len(ns))
