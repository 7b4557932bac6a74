"""A serverless endpoint, simulated: one queue, workers, cold starts, idle timeout, per-second billing.

``simulate`` models a Runpod serverless endpoint (Runpod's serverless documentation) like this:
requests join one first-in, first-out queue. A request goes to a warm idle worker if there is
one (the longest-running such worker); else it waits in the queue and, while fewer than
``max_workers`` run, a new worker starts (its cold start comes before it can serve). The first
worker that is warm and idle takes the head of the queue, so a busy worker that frees before the
new one is ready serves the request; the new worker still boots and is billed. A worker stays
warm for ``idle_timeout_s`` after its last job ends (a request arriving exactly then still finds
it warm), then stops. Each worker's lifetime, from its start to its stop, is billed rounded up
to a whole second. Latency = finish time - arrival time.

A worker may serve up to ``concurrency`` requests at once, as a serving engine with continuous
batching does (vLLM, SGLang; a Runpod handler declares it with a concurrency modifier): it takes
a request while it has a free slot, a booting worker counts as room for ``concurrency`` waiting
requests before another worker starts (one for each request with ``concurrency=1``), and a
request's service time may depend on how many the worker is serving when it starts, itself
included (``service_s`` as a function of that count, e.g. ``serving.batch_latency``).
A request's time is fixed when it starts (a newcomer does not slow the requests already in
flight): an approximation, exact for ``concurrency=1``.

Active workers (Runpod's always-on workers, billed at their own lower rate) are optional:
they are warm from time 0, never stop, count towards ``max_workers`` and are billed for the
whole period, ``duration_s`` (by default until the last flex worker stops or the last job ends).

A cold start is made of parts (:func:`cold_start`): starting the container and its Python,
downloading the model when no cache holds it, creating the CUDA context, loading the weights and
starting the serving engine (vLLM compiles its graphs and captures CUDA graphs), all billed, as
Runpod bills from a worker's start to its stop; the image pull comes first only in the uncached
case (``image_cached=False``): Runpod puts the image on the host when the endpoint's workers are
initialised, before a worker starts and billing begins (Runpod's serverless pricing and worker
pages, read 2026-12). Each part is an assumption in ``lab_utils/data/assumptions.toml``
(notebook 04 measures the container start). A snapshot restore (Runpod's FlashBoot) replaces
the whole start when the worker lands on a host that holds a snapshot, a share of starts
given by a hit rate; give ``simulate`` the :class:`ColdStart` itself and its k-th worker
restores or starts plainly as the hit rate spreads them (:meth:`ColdStart.start_s`).

Arrivals to simulate (steady, bursty, a nightly batch) come from ``lab_utils.arrivals``, named
here. Pure Python: no torch.
"""

from __future__ import annotations

import heapq
import itertools
import math
import operator
from dataclasses import dataclass

from lab_utils import assumptions, checks, prices
from lab_utils.arrivals import (  # noqa: F401 - the arrivals' module, named here as part of this one
    MAX_ARRIVALS,
    batch_arrivals,
    bursty_arrivals,
    poisson_arrivals,
)


@dataclass(frozen=True)
class SimulationResult:
    """What a traffic pattern costs on a serverless endpoint. Money in US dollars."""

    cost_usd: float  # flex billed seconds x price, plus active workers for the whole period
    cold_starts: int  # flex workers started (each paid a cold start)
    latencies_s: tuple[float, ...]  # in the order of the arrivals given
    p50_s: float  # median latency (nan when there were no requests)
    p95_s: float  # 95th percentile latency, linear interpolation (as numpy's default)
    billed_s: int  # flex worker-seconds billed, each lifetime rounded up to a whole second
    active_billed_s: int = 0  # active worker-seconds billed
    busy_s: float = 0.0  # worker-seconds in which a worker served at least one request (all workers)
    restored_starts: int = 0  # flex workers whose start was a snapshot restore (of cold_starts)
    waits_s: tuple[float, ...] = ()  # each request's wait for a worker (queue, cold start), arrival order
    in_flight: tuple[int, ...] = ()  # requests its worker served as each one started, itself included

    @property
    def cost(self) -> float:
        """The same as ``cost_usd`` (the older name)."""
        return self.cost_usd


def percentile(values, q: float) -> float:
    """The q-th percentile (0-100) of ``values`` by linear interpolation; nan when empty."""
    q = checks.number("q", q, minimum=0.0, strict=False, maximum=100.0)
    return _percentile_of_sorted(sorted(values), q)


def _percentile_of_sorted(ordered: list, q: float) -> float:
    """:func:`percentile` of values in order, ``q`` checked: one sort for several percentiles."""
    if not ordered:
        return math.nan
    position = (len(ordered) - 1) * q / 100
    below = math.floor(position)
    above = min(below + 1, len(ordered) - 1)
    return ordered[below] + (ordered[above] - ordered[below]) * (position - below)


class _Worker:
    """One worker: when it started and is ready to serve, the end times of the requests it is
    serving (a heap), the seconds it spent serving, whether it is always on."""

    __slots__ = (  # its attributes, read once per request: slots read faster than a dict
        "started_s", "ready_s", "concurrency", "spare_slots", "ends_s", "free_at_s", "last_end_s",
        "jobs_s", "active", "served_s", "extended_from_s",
    )  # fmt: skip

    def __init__(self, started_s: float, ready_s: float, active: bool, concurrency: int, keep_jobs: bool):
        self.started_s = started_s
        self.ready_s = ready_s
        self.concurrency = concurrency
        self.spare_slots = concurrency - 1  # slots of a booting worker beyond the request that started it
        self.ends_s: list[float] = []  # heap: end times of requests started, until a later start prunes them
        self.free_at_s = ready_s  # when the next request given to it can start (kept by simulate)
        self.last_end_s = ready_s
        self.served_s = 0.0  # busy_s, summed by simulate as the requests come
        self.extended_from_s = -math.inf  # the start of the last request that ended after all before it
        self.jobs_s: list[tuple[float, float]] | None = [] if keep_jobs else None  # (start, end) of each
        self.active = active

    def stops_at(self, idle_timeout_s: float) -> float:
        return math.inf if self.active else self.last_end_s + idle_timeout_s

    def busy_s(self) -> float:
        """Seconds in which it served at least one request: its requests in order of start, then
        end, each adding the time it ends after all before it (``served_s`` without ``jobs_s``)."""
        if self.jobs_s is None:
            return self.served_s
        busy, covered_to = 0.0, -math.inf
        for start, end in sorted(self.jobs_s):
            if end > covered_to:  # else wholly covered already
                busy += end - (start if start > covered_to else covered_to)
                covered_to = end
        return busy


_FREE_AT_S = operator.attrgetter("free_at_s")
_TIME = operator.itemgetter(1)


def simulate(
    arrival_times_s,
    *,
    service_s: float,
    cold_start_s: float | ColdStart,
    idle_timeout_s: float,
    max_workers: int,
    price_per_worker_s: float,
    active_workers: int = 0,
    active_price_per_worker_s: float = 0.0,
    duration_s: float | None = None,
    concurrency: int = 1,
) -> SimulationResult:
    """Serve requests arriving at ``arrival_times_s`` (seconds) and return cost and latencies.

    ``service_s``: seconds of work per request on a warm worker, or a function of the number of
    requests the worker is serving when this one starts (1 to ``concurrency``), e.g.
    ``serving.batch_latency``; ``concurrency``: requests one worker serves at
    once; ``cold_start_s``: seconds from a worker's start until it can serve, or a
    :class:`ColdStart` (:func:`cold_start`), whose snapshot restores then take their share of
    the starts (:meth:`ColdStart.start_s`); ``idle_timeout_s``: seconds a worker stays warm after
    its last job; ``price_per_worker_s``: dollars per flex worker-second. See the module docstring
    for the rules.
    """
    given = dict(locals())  # the keywords as given
    arrivals = list(given.pop("arrival_times_s"))
    return _simulate(arrivals, False, **given) or _simulate(arrivals, True, **given)


def _simulate(
    arrivals: list,
    keep_jobs: bool,
    *,
    service_s,
    cold_start_s,
    idle_timeout_s,
    max_workers,
    price_per_worker_s,
    active_workers,
    active_price_per_worker_s,
    duration_s,
    concurrency,
) -> SimulationResult | None:
    """:func:`simulate`; None where two requests that started at once on a worker end in the
    other order (a shorter time in a larger batch) and the workers did not keep their requests
    (``keep_jobs``): each worker's busy time is summed as its requests come, which is the order
    of start, then end, :meth:`_Worker.busy_s` sums them in, but there."""
    if not _plain_times(arrivals):  # name the first bad one
        arrivals = [checks.number(f"arrival_times_s[{i}]", t, strict=False) for i, t in enumerate(arrivals)]
    concurrency = checks.count("concurrency", concurrency, minimum=1)
    service_s = _service_function(service_s, concurrency)
    start_s = _start_function(cold_start_s)
    idle_timeout_s = checks.number("idle_timeout_s", idle_timeout_s, strict=False)
    max_workers = checks.count("max_workers", max_workers, minimum=1)
    price_per_worker_s = checks.number("price_per_worker_s", price_per_worker_s, strict=False)
    active_workers = checks.count("active_workers", active_workers, minimum=0)
    active_price_per_worker_s = checks.number(
        "active_price_per_worker_s", active_price_per_worker_s, strict=False
    )
    if active_workers > max_workers:
        raise ValueError(f"active_workers={active_workers} exceeds max_workers={max_workers}")

    workers = [_Worker(0.0, 0.0, True, concurrency, keep_jobs) for _ in range(active_workers)]
    retired_lifetimes_s, retired_busy_s, started, restored = [], 0.0, 0, 0
    latencies = [0.0] * len(arrivals)
    waits, in_flight = [0.0] * len(arrivals), [1] * len(arrivals)
    first_stop_s = math.inf
    heappush, heappop, in_order = heapq.heappush, heapq.heappop, True
    # Once per request, so written inline: a flex worker stops at last_end_s + idle_timeout_s
    # (_Worker.stops_at), and a worker takes a request below (a method call per request costs).
    for index, arrival in _in_arrival_order(arrivals):  # the queue, first in first out
        # Workers whose idle window closed before this arrival have stopped: bill them. None can
        # have before `first_stop_s`, the earliest stop when last looked (stops only move later).
        if arrival > first_stop_s:
            first_stop_s = math.inf
            for worker in [w for w in workers if not w.active]:  # active workers never stop
                stop = worker.last_end_s + idle_timeout_s
                if stop < arrival:
                    retired_lifetimes_s.append(stop - worker.started_s)
                    retired_busy_s += worker.busy_s()
                    workers.remove(worker)
                elif stop < first_stop_s:
                    first_stop_s = stop
        for worker in workers:  # the longest-running with a free slot
            if worker.free_at_s <= arrival:
                start = arrival
                break
        else:
            # the request waits for a spare slot of a worker still booting (one-slot workers have none)
            for booting in workers if concurrency > 1 else ():
                if booting.ready_s > arrival and booting.spare_slots:
                    booting.spare_slots -= 1
                    break
            else:
                if len(workers) < max_workers:  # the request waits; a new worker boots meanwhile
                    seconds, was_restored = start_s(started)
                    started, restored = started + 1, restored + was_restored
                    workers.append(_Worker(arrival, arrival + seconds, False, concurrency, keep_jobs))
                    first_stop_s = min(first_stop_s, workers[-1].stops_at(idle_timeout_s))
            worker = min(workers, key=_FREE_AT_S)  # the first with a warm, free slot (the earliest free)
            start = worker.free_at_s
        # The worker starts the request at `start` (not before it is free: ready, with a slot
        # free), taking service_s(n) seconds in a batch of n. It is free again once ready with a
        # slot free (fewer than `concurrency` in flight, else at the earliest end), and not before
        # this request starts: requests start in the order given.
        ends = worker.ends_s
        while ends and ends[0] <= start:
            heappop(ends)
        batch = len(ends) + 1
        end = start + service_s(batch)
        heappush(ends, end)
        last = worker.last_end_s  # busy_s adds the time the request ends after all before it
        if end > last:
            worker.served_s += end - (start if start > last else last)
            worker.last_end_s, worker.extended_from_s = end, start
        elif end < last and start == worker.extended_from_s:  # busy_s adds it before a later end
            in_order = False
        if keep_jobs:
            worker.jobs_s.append((start, end))
        free_at = worker.ready_s if batch < concurrency else ends[0]
        worker.free_at_s = free_at if free_at > start else start
        latencies[index] = end - arrival
        waits[index] = start - arrival
        in_flight[index] = batch

    if not (in_order or keep_jobs):
        return None
    flex = [w for w in workers if not w.active]
    lifetimes_s = retired_lifetimes_s + [w.stops_at(idle_timeout_s) - w.started_s for w in flex]
    billed_s = sum(math.ceil(lifetime) for lifetime in lifetimes_s)
    # The last request ended on a worker still here: an arrival retires a worker after its last end,
    # and that arrival's request ends later still. (ends_s is empty only on a worker never served.)
    last_end_s = max([0.0] + [w.last_end_s for w in workers if w.ends_s])
    period_s = max([last_end_s] + [w.stops_at(idle_timeout_s) for w in flex])
    if duration_s is not None:
        period_s = max(period_s, checks.number("duration_s", duration_s, strict=False))
    active_billed_s = active_workers * math.ceil(period_s)
    ordered_s = sorted(latencies)  # for both percentiles
    return SimulationResult(
        cost_usd=billed_s * price_per_worker_s + active_billed_s * active_price_per_worker_s,
        cold_starts=len(lifetimes_s),
        latencies_s=tuple(latencies),
        p50_s=_percentile_of_sorted(ordered_s, 50.0),
        p95_s=_percentile_of_sorted(ordered_s, 95.0),
        billed_s=billed_s,
        active_billed_s=active_billed_s,
        busy_s=sum(w.busy_s() for w in workers) + retired_busy_s,
        restored_starts=restored,
        waits_s=tuple(waits),
        in_flight=tuple(in_flight),
    )


def _plain_times(arrivals: list[float]) -> bool:
    """True when every arrival is a float, finite and not negative, checked without a Python loop
    (a finite sum has no nan or inf; a sum that overflows says False, and simulate checks each)."""
    return not arrivals or (
        set(map(type, arrivals)) == {float} and min(arrivals) >= 0.0 and math.isfinite(sum(arrivals))
    )


def _in_arrival_order(arrivals: list[float]):
    """(index, time) of ``arrivals`` in order of time (ties in the order given): ``enumerate``
    when they are in order already, as the generators below give them."""
    if all(map(operator.le, arrivals, itertools.islice(arrivals, 1, None))):
        return enumerate(arrivals)
    return sorted(enumerate(arrivals), key=_TIME)


def _start_function(cold_start_s):
    """``cold_start_s`` checked, as a function of the index of a flex worker's start giving
    (seconds, whether a restore): a number (every start alike, none restored) or a
    :class:`ColdStart` (:meth:`ColdStart.start_s`, its plain start summed once)."""
    if isinstance(cold_start_s, ColdStart):
        plain_s, restore_s = cold_start_s.total_s, cold_start_s.restore_s

        def start(index: int) -> tuple[float, bool]:
            restored = cold_start_s.restored(index)
            return (restore_s if restored else plain_s), restored

        return start
    seconds = checks.number("cold_start_s", cold_start_s, strict=False)
    return lambda index: (seconds, False)


def _service_function(service_s, concurrency: int):
    """``service_s`` checked, as a function of the batch: a positive number (the same for every
    batch), or a function giving one for 1..``concurrency``."""
    if not callable(service_s):
        seconds = checks.number("service_s", service_s)
        return lambda in_flight: seconds
    for in_flight in (1, concurrency):
        checks.number(f"service_s({in_flight})", service_s(in_flight))
    return service_s


# ---------------------------------------------- a worker's own time, simulated apart from the queue


def requests_per_busy_worker_s(result: SimulationResult) -> float:
    """The request rate one busy worker sees in ``result``: the requests served over the
    worker-seconds in which a worker served at least one (``busy_s``), which is the learner's
    rate over the mean number of busy workers. 0.0 when nothing was served."""
    return len(result.latencies_s) / result.busy_s if result.busy_s > 0 else 0.0


def shared_start_share(result: SimulationResult) -> float:
    """The share of the requests in ``result`` that started on a worker already serving
    another (``in_flight`` above 1); 0.0 when there were none."""
    if not result.in_flight:
        return 0.0
    above_1 = sum(map(operator.gt, result.in_flight, itertools.repeat(1)))  # n > 1 of each, counted in C
    return above_1 / len(result.in_flight)


def latencies_with_worker_times_s(result: SimulationResult, in_worker_s) -> tuple[float, ...]:
    """Each request's latency (arrival to last token) with its time inside the worker taken
    from elsewhere: the i-th request's wait for a worker as :func:`simulate` found it
    (``waits_s``: the queue and any cold start) plus ``in_worker_s[i mod N]``, N samples of a
    worker's own time from arrival at the worker to the last token (the advisor takes them from
    ``replica.at_rate`` at :func:`requests_per_busy_worker_s`: a batching engine's steps).

    What it leaves out: which wait goes with which in-worker time (a request that waited out a
    cold start arrives at its worker among others, in a fuller batch than the average: the
    pairing by index takes them as independent); and the waits themselves come from the
    ``service_s`` :func:`simulate` was given (when workers free up, so when a new one starts),
    as does the bill, not from the in-worker samples."""
    samples = [checks.number(f"in_worker_s[{i}]", t, strict=False) for i, t in enumerate(in_worker_s)]
    if not samples:
        raise ValueError("in_worker_s: give at least one worker time")
    return tuple(map(operator.add, result.waits_s, itertools.cycle(samples)))  # the i-th, i mod N


def pod_cost(usd_per_hour: float, duration_s: float) -> float:
    """Dollars for an always-on pod over ``duration_s``, billed per second (rounded up)."""
    usd_per_hour = checks.number("usd_per_hour", usd_per_hour, strict=False)
    duration_s = checks.number("duration_s", duration_s, strict=False)
    return math.ceil(duration_s) * usd_per_hour / prices.SECONDS_PER_HOUR


@dataclass(frozen=True)
class ColdStart:
    """A GPU worker's cold start, in seconds: ``parts`` holds the (label, seconds) of a plain
    start in the order they happen; ``restore_s`` the seconds of a snapshot restore and
    ``restore_hit_rate`` the share of starts that are restores (0: none); ``assumptions`` the
    (name, value) of each default it took."""

    parts: tuple[tuple[str, float], ...]
    assumptions: tuple[tuple[str, object], ...] = ()
    restore_s: float = 0.0
    restore_hit_rate: float = 0.0

    @property
    def total_s(self) -> float:
        """Seconds of a plain start: the sum of the parts."""
        return sum(seconds for _, seconds in self.parts)

    @property
    def expected_s(self) -> float:
        """Seconds of a start on average: restores at their hit rate, plain starts otherwise."""
        return self.restore_hit_rate * self.restore_s + (1 - self.restore_hit_rate) * self.total_s

    def restored(self, index: int) -> bool:
        """Whether the start numbered ``index`` (0, 1, ...) is a restore: the hits spread evenly,
        floor((index + 1) x rate) > floor(index x rate), so the first start of an endpoint is
        plain (no snapshot exists yet) unless every start restores."""
        if type(index) is not int or index < 0:  # simulate asks once per start: a plain int passes
            index = checks.count("index", index, minimum=0)
        rate = self.restore_hit_rate
        return math.floor((index + 1) * rate) > math.floor(index * rate)

    def start_s(self, index: int) -> float:
        """Seconds of the start numbered ``index``: ``restore_s`` or :attr:`total_s`."""
        return self.restore_s if self.restored(index) else self.total_s

    def cost_usd(self, price_per_worker_s: float) -> float:
        """Dollars one plain cold start bills at ``price_per_worker_s`` (before the job it serves)."""
        return math.ceil(self.total_s) * checks.number("price_per_worker_s", price_per_worker_s, strict=False)


_COLD_START_SECONDS = {  # the parts given in seconds
    "image_pull_s": "image pull",
    "container_start_s": "container start",
    "cuda_init_s": "CUDA init",
    "engine_start_s": "engine start",
}


def cold_start(
    weight_bytes,
    *,
    image_cached=None,
    image_pull_s=None,
    container_start_s=None,
    cuda_init_s=None,
    weight_load_bytes_per_s=None,
    engine_start_s=None,
    model_cached=None,
    download_bytes_per_s=None,
    restore_s=None,
    restore_hit_rate=None,
) -> ColdStart:
    """The cold start of a worker that serves ``weight_bytes`` of weights.

    A plain start: image pull (only when not ``image_cached``: Runpod pulls the image onto the
    host before the worker starts and billing begins) + container start + model download (``weight_bytes`` /
    ``download_bytes_per_s``, only when ``model_cached`` is False: no image or volume holds the
    weights) + CUDA initialisation + weight load (``weight_bytes`` / ``weight_load_bytes_per_s``)
    + engine start (``engine_start_s``: vLLM's graph compilation and CUDA graph capture; 0 for a
    plain handler). A snapshot restore (``restore_s``, Runpod's FlashBoot) replaces the whole
    start for a share ``restore_hit_rate`` of starts. Each argument left None is the
    ``cold_start.*`` assumption of its name.
    """
    weight_bytes = checks.number("weight_bytes", weight_bytes, strict=False)
    given = {
        "image_cached": image_cached,
        "image_pull_s": image_pull_s,
        "container_start_s": container_start_s,
        "cuda_init_s": cuda_init_s,
        "weight_load_bytes_per_s": weight_load_bytes_per_s,
        "engine_start_s": engine_start_s,
        "model_cached": model_cached,
        "restore_s": restore_s,
        "restore_hit_rate": restore_hit_rate,
    }
    resolved, taken = assumptions.resolve(**{f"cold_start__{name}": value for name, value in given.items()})
    values = {name: resolved[f"cold_start.{name}"] for name in given}
    seconds = {name: checks.number(name, values[name], strict=False) for name in _COLD_START_SECONDS}
    for flag in ("image_cached", "model_cached"):
        if not isinstance(values[flag], bool):
            raise TypeError(f"{flag} must be True or False, got {values[flag]!r}")
    if values["image_cached"]:
        taken.pop("cold_start.image_pull_s", None)  # not part of this start
    parts = [] if values["image_cached"] else [("image pull", seconds["image_pull_s"])]
    parts.append(("container start", seconds["container_start_s"]))
    if not values["model_cached"]:
        download, downloaded = assumptions.resolve(cold_start__download_bytes_per_s=download_bytes_per_s)
        download_bytes_per_s = download["cold_start.download_bytes_per_s"]
        taken.update(downloaded)
        parts.append(
            ("model download", weight_bytes / checks.number("download_bytes_per_s", download_bytes_per_s))
        )
    load_s = weight_bytes / checks.number("weight_load_bytes_per_s", values["weight_load_bytes_per_s"])
    parts += [
        ("CUDA init", seconds["cuda_init_s"]),
        ("weight load", load_s),
        ("engine start", seconds["engine_start_s"]),
    ]
    hit_rate = checks.number("restore_hit_rate", values["restore_hit_rate"], strict=False, maximum=1.0)
    return ColdStart(
        tuple(parts),
        tuple(taken.items()),
        restore_s=checks.number("restore_s", values["restore_s"], strict=False),
        restore_hit_rate=hit_rate,
    )
