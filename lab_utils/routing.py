"""Where to send a request, CPU or GPU: what offloading costs, when the GPU overtakes, and what
a mix of both does to average latency, tail latency and cost.

- :func:`offload_floor`: the least time a request sent to a GPU can take. The CPU runs the
  framework's code and launches every kernel and copy, one after another, while the GPU must
  copy the inputs over the host link, do the work and copy the result back, in that order.
  Issuing overlaps the GPU's work, so the floor is max(issue, transfer + work), with the work at
  the device's roofline, max(FLOPs / peak, bytes / bandwidth) (Williams, Waterman & Patterson,
  CACM 52(4), 2009).
- :func:`pcie_bytes_per_s`: the host link's bandwidth per direction from the PCI Express
  signalling rate per lane and its 128b/130b encoding (PCIe 3.0 to 5.0 base specifications).
- :func:`crossover_batch`: the smallest batch from which measured GPU times stay below CPU ones.
- :func:`mix`: requests split into routes (a share of the traffic served by one kind of worker,
  with per-request seconds and the worker's price); average and percentile latency of the whole
  traffic (the mixture of the routes' distributions) and the cost per request.

Seconds, bytes, FLOPs and US dollars throughout. Pure arithmetic: no torch, no clock. Measuring
per-request latencies is ``lab_utils.latency.request_latencies_s`` (the measuring layer).
"""

from __future__ import annotations

import bisect
import math
from dataclasses import dataclass

from lab_utils import checks
from lab_utils.interconnects import PCIE_TRANSFERS_PER_S_PER_LANE, pcie_bytes_per_s
from lab_utils.prices import SECONDS_PER_HOUR

__all__ = [
    "PCIE_TRANSFERS_PER_S_PER_LANE",
    "OffloadFloor",
    "Route",
    "Mix",
    "crossover_batch",
    "mix",
    "offload_floor",
    "pcie_bytes_per_s",
]
# PCIE_TRANSFERS_PER_S_PER_LANE and pcie_bytes_per_s are data (lab_utils.interconnects), used here
# to price offloading and listed so that notebooks find the host link beside it

_SHARE_TOLERANCE = 1e-9


def _seconds_tuple(name: str, values) -> tuple[float, ...]:
    """One number or a non-empty sequence of numbers, as a tuple of seconds > 0."""
    if isinstance(values, (int, float)) and not isinstance(values, bool):
        values = (values,)
    values = tuple(checks.numbers(name, values))
    if not values:
        raise ValueError(f"{name} is empty: give at least one time in seconds")
    return values


# --- the host link and the cost of offloading ------------------------------------------------


@dataclass(frozen=True)
class OffloadFloor:
    """The least seconds one request can take on a GPU, and its parts.

    issue_s: the CPU running the framework's code (Python, dispatch) and launching every kernel
    and copy, one after another; transfer_s: inputs to the GPU and outputs back over the host
    link; work_s: the kernels at the device's roofline, max(FLOPs / peak, bytes / bandwidth);
    total_s = max(issue_s, transfer_s + work_s), since issuing overlaps the GPU's work.
    """

    issue_s: float
    transfer_s: float
    work_s: float

    @property
    def total_s(self) -> float:
        return max(self.issue_s, self.transfer_s + self.work_s)

    @property
    def bound_by(self) -> str:
        """'issuing operations' when the CPU's side sets the floor, else 'transfer + work'."""
        return "issuing operations" if self.issue_s >= self.transfer_s + self.work_s else "transfer + work"


def offload_floor(
    *,
    flops,
    device_bytes,
    transfer_bytes,
    launches,
    launch_s,
    peak_flops,
    bandwidth_bytes_per_s,
    link_bytes_per_s,
    framework_s=0.0,
) -> OffloadFloor:
    """Lower bound on the seconds of one request offloaded to a GPU (see :class:`OffloadFloor`).

    flops: arithmetic of the request; device_bytes: bytes its kernels move in GPU memory (at
    least the weights, read once); transfer_bytes: inputs plus outputs copied over the host
    link; launches: kernels and copies the CPU launches, launch_s: the driver's seconds for
    each; framework_s: seconds of the framework's own code on the CPU for the request (PyTorch
    on the meta device measures it: shapes only, no arithmetic); peak_flops and
    bandwidth_bytes_per_s: the GPU's (vendor specification); link_bytes_per_s: the host link's
    (:func:`pcie_bytes_per_s`). Real requests take longer: kernels rarely reach the peak, and
    small ones cannot fill the GPU.
    """
    flops = checks.number("flops", flops, strict=False)
    device_bytes = checks.number("device_bytes", device_bytes, strict=False)
    transfer_bytes = checks.number("transfer_bytes", transfer_bytes, strict=False)
    launches = checks.count("launches", launches, minimum=1)
    launch_s = checks.number("launch_s", launch_s, strict=False)
    framework_s = checks.number("framework_s", framework_s, strict=False)
    peak = checks.number("peak_flops", peak_flops)
    bandwidth = checks.number("bandwidth_bytes_per_s", bandwidth_bytes_per_s)
    link = checks.number("link_bytes_per_s", link_bytes_per_s)
    return OffloadFloor(
        issue_s=framework_s + launches * launch_s,
        transfer_s=transfer_bytes / link,
        work_s=max(flops / peak, device_bytes / bandwidth),
    )


def crossover_batch(batches, cpu_seconds, gpu_seconds) -> int | None:
    """The smallest batch from which the GPU is faster at every larger batch measured, or None.

    ``batches``: increasing batch sizes; ``cpu_seconds``, ``gpu_seconds``: seconds per batch on
    each device, one per batch. Requiring the GPU to stay ahead ignores a lucky single point.
    """
    batches = checks.sequence("batches", batches)
    cpu = checks.sequence("cpu_seconds", cpu_seconds)
    gpu = checks.sequence("gpu_seconds", gpu_seconds)
    if not batches:
        raise ValueError("batches is empty: give at least one batch size")
    if not len(batches) == len(cpu) == len(gpu):
        raise ValueError(
            f"batches, cpu_seconds and gpu_seconds must have one entry per batch; got lengths "
            f"{len(batches)}, {len(cpu)}, {len(gpu)}"
        )
    for i, batch in enumerate(batches):
        checks.count(f"batches[{i}]", batch, minimum=1)
    if any(later <= earlier for earlier, later in zip(batches, batches[1:])):
        raise ValueError(f"batches={batches!r}: must be strictly increasing")
    cpu = checks.numbers("cpu_seconds", cpu)
    gpu = checks.numbers("gpu_seconds", gpu)
    crossover = None
    for batch, cpu_s, gpu_s in reversed(list(zip(batches, cpu, gpu))):
        if gpu_s >= cpu_s:
            break
        crossover = batch
    return crossover


# --- routing a mix of requests ---------------------------------------------------------------


@dataclass(frozen=True)
class Route:
    """A share of the requests and the workers that serve them.

    name: e.g. "short on CPU"; share: fraction of all requests (0 to 1); latencies_s: per-request
    latencies (measured samples, or one figure); usd_per_hour: of one worker; concurrency:
    requests one worker serves at once (batching). Workers are billed only while busy, so a
    request costs its latency x price / concurrency.
    """

    name: str
    share: float
    latencies_s: tuple[float, ...]
    usd_per_hour: float = 0.0
    concurrency: int = 1

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name.strip():
            raise ValueError(f"name={self.name!r}: give each route a non-empty name")
        object.__setattr__(self, "share", checks.number("share", self.share, maximum=1.0, strict=False))
        object.__setattr__(self, "latencies_s", _seconds_tuple("latencies_s", self.latencies_s))
        object.__setattr__(
            self, "usd_per_hour", checks.number("usd_per_hour", self.usd_per_hour, strict=False)
        )
        checks.count("concurrency", self.concurrency, minimum=1)

    @property
    def mean_s(self) -> float:
        return math.fsum(self.latencies_s) / len(self.latencies_s)

    @property
    def cost_per_request(self) -> float:
        """Dollars: mean seconds x price per second / concurrency."""
        return self.mean_s * self.usd_per_hour / SECONDS_PER_HOUR / self.concurrency


@dataclass(frozen=True)
class Mix:
    """All requests, split over :class:`Route` s whose shares add up to 1. Built by :func:`mix`.

    The latency of a random request follows the mixture of the routes' distributions: each
    route's samples weigh share / number of samples. Percentiles are of that mixture (the
    smallest latency that at least that fraction of requests do not exceed).
    """

    routes: tuple[Route, ...]

    def __post_init__(self) -> None:
        routes = tuple(self.routes)
        if not routes:
            raise ValueError("routes is empty: give at least one Route")
        for route in routes:
            if not isinstance(route, Route):
                raise TypeError(f"routes must hold Route objects, got {type(route).__name__}")
        total = math.fsum(route.share for route in routes)
        if abs(total - 1.0) > _SHARE_TOLERANCE:
            shares = ", ".join(f"{r.name}: {r.share:g}" for r in routes)
            raise ValueError(f"the routes' shares must add up to 1, got {total:.12g} ({shares})")
        object.__setattr__(self, "routes", routes)
        points = sorted(
            (s, r.share / len(r.latencies_s)) for r in routes for s in r.latencies_s if r.share > 0
        )
        cumulative, running = [], 0.0
        for _, weight in points:
            running += weight
            cumulative.append(running)
        object.__setattr__(self, "_seconds", tuple(s for s, _ in points))
        object.__setattr__(self, "_cumulative", tuple(cumulative))

    @property
    def mean_s(self) -> float:
        """Average seconds per request: sum of share x the route's mean."""
        return math.fsum(r.share * r.mean_s for r in self.routes)

    def quantile(self, q: float) -> float:
        """Seconds within which a fraction ``q`` (0 to 1) of requests finish."""
        q = checks.number("q", q, maximum=1.0, strict=False)
        index = bisect.bisect_left(self._cumulative, q - _SHARE_TOLERANCE)
        return self._seconds[min(index, len(self._seconds) - 1)]

    @property
    def p50_s(self) -> float:
        return self.quantile(0.50)

    @property
    def p95_s(self) -> float:
        return self.quantile(0.95)

    @property
    def p99_s(self) -> float:
        return self.quantile(0.99)

    def share_slower_than(self, seconds: float) -> float:
        """Fraction of requests that take longer than ``seconds`` (e.g. a latency target)."""
        seconds = checks.number("seconds", seconds, strict=False)
        index = bisect.bisect_right(self._seconds, seconds)
        return max(0.0, 1.0 - (self._cumulative[index - 1] if index else 0.0))

    @property
    def cost_per_request(self) -> float:
        """Dollars per request, averaged over the routes by share."""
        return math.fsum(r.share * r.cost_per_request for r in self.routes)

    @property
    def cost_per_million_requests(self) -> float:
        return self.cost_per_request * 1e6


def mix(routes) -> Mix:
    """The whole traffic of ``routes`` (an iterable of :class:`Route`, shares adding up to 1).

    The hybrid cluster notebook 06 checks: ``mix([Route("CPU", 0.8, 0.005), Route("GPU", 0.2, 0.2)])``
    has a mean of 44 ms, a median of 5 ms and a 95th percentile of 200 ms.
    """
    if isinstance(routes, Route):
        routes = (routes,)
    try:
        routes = tuple(routes)
    except TypeError:
        raise TypeError(f"routes must be an iterable of Route, got {type(routes).__name__}") from None
    return Mix(routes)
