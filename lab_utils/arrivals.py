"""Arrival times of requests for :func:`serverless.simulate` and the replica simulator: steady
(Poisson), bursty, or a nightly batch, each a tuple of seconds in order. Part of
``lab_utils.serverless``, which names all of it. Pure Python: no torch.
"""

from __future__ import annotations

import math
import random

from lab_utils import checks

MAX_ARRIVALS = 10_000_000  # a list of arrivals this long takes about a gigabyte and minutes to simulate


def _at_most_max_arrivals(expected: float, what: str) -> None:
    """ValueError naming ``what`` when a generator would make more than MAX_ARRIVALS arrivals."""
    if expected > MAX_ARRIVALS:
        raise ValueError(
            f"{what} asks for about {expected:.3g} arrivals; at most {MAX_ARRIVALS:,} are simulated"
        )


def poisson_arrivals(rate_per_s: float, duration_s: float, seed: int = 0) -> tuple[float, ...]:
    """Independent arrivals at an average ``rate_per_s`` over ``duration_s`` (steady traffic)."""
    rate_per_s = checks.number("rate_per_s", rate_per_s, strict=False)
    duration_s = checks.number("duration_s", duration_s, strict=False)
    _at_most_max_arrivals(
        rate_per_s * duration_s, f"rate_per_s={rate_per_s:g} over duration_s={duration_s:g}"
    )
    rng, times, t = random.Random(seed), [], 0.0
    while rate_per_s > 0:
        t += rng.expovariate(rate_per_s)
        if t >= duration_s:
            break
        times.append(t)
    return tuple(times)


def bursty_arrivals(
    burst_size: int, burst_every_s: float, duration_s: float, spread_s: float = 1.0, seed: int = 0
) -> tuple[float, ...]:
    """Bursts of ``burst_size`` requests every ``burst_every_s``, each burst within ``spread_s``."""
    burst_size = checks.count("burst_size", burst_size, minimum=1)
    burst_every_s = checks.number("burst_every_s", burst_every_s)
    duration_s = checks.number("duration_s", duration_s, strict=False)
    spread_s = checks.number("spread_s", spread_s, strict=False)
    _at_most_max_arrivals(
        burst_size * duration_s / burst_every_s,
        f"burst_size={burst_size} every burst_every_s={burst_every_s:g} over duration_s={duration_s:g}",
    )
    rng = random.Random(seed)
    starts = [k * burst_every_s for k in range(math.ceil(duration_s / burst_every_s))]
    return tuple(sorted(s + rng.uniform(0, spread_s) for s in starts for _ in range(burst_size)))


def batch_arrivals(n_requests: int, start_s: float = 0.0, spacing_s: float = 0.0) -> tuple[float, ...]:
    """A nightly batch: ``n_requests`` submitted from ``start_s``, ``spacing_s`` apart."""
    n_requests = checks.count("n_requests", n_requests, minimum=0)
    start_s = checks.number("start_s", start_s, strict=False)
    spacing_s = checks.number("spacing_s", spacing_s, strict=False)
    _at_most_max_arrivals(n_requests, f"n_requests={n_requests}")
    return tuple(start_s + k * spacing_s for k in range(n_requests))
