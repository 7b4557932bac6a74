"""A serverless endpoint, simulated: workers, cold starts, idle timeout, per-second billing.

``simulate`` models a Runpod serverless endpoint (Runpod's serverless documentation) like this:
requests are served first come, first served; a request goes to a warm idle worker if there
is one (the longest-running such worker), else starts a new worker while fewer than
``max_workers`` run (its cold start comes before its service), else waits for the first worker
to free. A worker stays warm for ``idle_timeout_s`` after its last job ends (a request arriving
exactly then still finds it warm), then stops. Each worker's lifetime, from its start to its
stop, is billed rounded up to a whole second. Latency = finish time - arrival time.

Active workers (Runpod's always-on workers, billed at their own lower rate) are optional:
they are warm from time 0, never stop, count towards ``max_workers`` and are billed for the
whole period, ``duration_s`` (by default until the last flex worker stops or the last job ends).

Pure Python: no torch.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass

from lab_utils import checks


@dataclass(frozen=True)
class SimulationResult:
    """What a traffic pattern costs on a serverless endpoint. Money in US dollars."""

    cost: float  # flex billed seconds x price, plus active workers for the whole period
    cold_starts: int  # flex workers started (each paid a cold start)
    latencies_s: tuple[float, ...]  # in the order of the arrivals given
    p50_s: float  # median latency (nan when there were no requests)
    p95_s: float  # 95th percentile latency, linear interpolation (as numpy's default)
    billed_s: int  # flex worker-seconds billed, each lifetime rounded up to a whole second
    active_billed_s: int = 0  # active worker-seconds billed


def percentile(values, q: float) -> float:
    """The q-th percentile (0-100) of ``values`` by linear interpolation; nan when empty."""
    q = checks.number("q", q, minimum=0.0, strict=False, maximum=100.0)
    ordered = sorted(values)
    if not ordered:
        return math.nan
    position = (len(ordered) - 1) * q / 100
    below = math.floor(position)
    above = min(below + 1, len(ordered) - 1)
    return ordered[below] + (ordered[above] - ordered[below]) * (position - below)


class _Worker:
    """One worker: when it started, when its current job ends, whether it is always on."""

    def __init__(self, started_s: float, free_at_s: float, active: bool):
        self.started_s = started_s
        self.free_at_s = free_at_s
        self.active = active

    def stops_at(self, idle_timeout_s: float) -> float:
        return math.inf if self.active else self.free_at_s + idle_timeout_s


def simulate(
    arrival_times_s,
    *,
    service_s: float,
    cold_start_s: float,
    idle_timeout_s: float,
    max_workers: int,
    price_per_worker_s: float,
    active_workers: int = 0,
    active_price_per_worker_s: float = 0.0,
    duration_s: float | None = None,
) -> SimulationResult:
    """Serve requests arriving at ``arrival_times_s`` (seconds) and return cost and latencies.

    ``service_s``: seconds of work per request on a warm worker; ``cold_start_s``: seconds from
    a worker's start until it can serve (container start + model load); ``idle_timeout_s``:
    seconds a worker stays warm after its last job; ``price_per_worker_s``: dollars per flex
    worker-second. See the module docstring for the rules.
    """
    arrivals = [checks.number(f"arrival_times_s[{i}]", t, strict=False) for i, t in enumerate(arrival_times_s)]
    service_s = checks.number("service_s", service_s)
    cold_start_s = checks.number("cold_start_s", cold_start_s, strict=False)
    idle_timeout_s = checks.number("idle_timeout_s", idle_timeout_s, strict=False)
    max_workers = checks.count("max_workers", max_workers, minimum=1)
    price_per_worker_s = checks.number("price_per_worker_s", price_per_worker_s, strict=False)
    active_workers = checks.count("active_workers", active_workers, minimum=0)
    active_price_per_worker_s = checks.number("active_price_per_worker_s", active_price_per_worker_s, strict=False)
    if active_workers > max_workers:
        raise ValueError(f"active_workers={active_workers} exceeds max_workers={max_workers}")

    workers = [_Worker(0.0, 0.0, active=True) for _ in range(active_workers)]
    retired_lifetimes_s = []
    latencies = [0.0] * len(arrivals)
    last_end_s = 0.0
    for index in sorted(range(len(arrivals)), key=arrivals.__getitem__):
        arrival = arrivals[index]
        # Workers whose idle window closed before this arrival have stopped: bill them.
        for worker in [w for w in workers if w.stops_at(idle_timeout_s) < arrival]:
            retired_lifetimes_s.append(worker.stops_at(idle_timeout_s) - worker.started_s)
            workers.remove(worker)
        idle = [w for w in workers if w.free_at_s <= arrival]
        if idle:
            worker, start = idle[0], arrival
        elif len(workers) < max_workers:
            worker = _Worker(arrival, arrival, active=False)
            workers.append(worker)
            start = arrival + cold_start_s
        else:
            worker = min(workers, key=lambda w: w.free_at_s)
            start = worker.free_at_s
        worker.free_at_s = start + service_s
        latencies[index] = worker.free_at_s - arrival
        last_end_s = max(last_end_s, worker.free_at_s)

    flex = [w for w in workers if not w.active]
    lifetimes_s = retired_lifetimes_s + [w.stops_at(idle_timeout_s) - w.started_s for w in flex]
    billed_s = sum(math.ceil(lifetime) for lifetime in lifetimes_s)
    period_s = max([last_end_s] + [w.stops_at(idle_timeout_s) for w in flex])
    if duration_s is not None:
        period_s = max(period_s, checks.number("duration_s", duration_s, strict=False))
    active_billed_s = active_workers * math.ceil(period_s)
    return SimulationResult(
        cost=billed_s * price_per_worker_s + active_billed_s * active_price_per_worker_s,
        cold_starts=len(lifetimes_s),
        latencies_s=tuple(latencies),
        p50_s=percentile(latencies, 50),
        p95_s=percentile(latencies, 95),
        billed_s=billed_s,
        active_billed_s=active_billed_s,
    )


def pod_cost(price_per_hour: float, duration_s: float) -> float:
    """Dollars for an always-on pod over ``duration_s``, billed per second (rounded up)."""
    price_per_hour = checks.number("price_per_hour", price_per_hour, strict=False)
    duration_s = checks.number("duration_s", duration_s, strict=False)
    return math.ceil(duration_s) * price_per_hour / 3600


def poisson_arrivals(rate_per_s: float, duration_s: float, seed: int = 0) -> tuple[float, ...]:
    """Independent arrivals at an average ``rate_per_s`` over ``duration_s`` (steady traffic)."""
    rate_per_s = checks.number("rate_per_s", rate_per_s, strict=False)
    duration_s = checks.number("duration_s", duration_s, strict=False)
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
    rng = random.Random(seed)
    starts = [k * burst_every_s for k in range(math.ceil(duration_s / burst_every_s))]
    return tuple(sorted(s + rng.uniform(0, spread_s) for s in starts for _ in range(burst_size)))


def batch_arrivals(n_requests: int, start_s: float = 0.0, spacing_s: float = 0.0) -> tuple[float, ...]:
    """A nightly batch: ``n_requests`` submitted from ``start_s``, ``spacing_s`` apart."""
    n_requests = checks.count("n_requests", n_requests, minimum=0)
    start_s = checks.number("start_s", start_s, strict=False)
    spacing_s = checks.number("spacing_s", spacing_s, strict=False)
    return tuple(start_s + k * spacing_s for k in range(n_requests))
