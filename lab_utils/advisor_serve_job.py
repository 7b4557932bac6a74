"""The advisor's serving job, checked (:class:`_ServeJob`): what every part of
``advisor_serving.serve`` asks the calculators about, the month and day in seconds, the best
precision of a server's options (simulating only the latencies that decide it) and a device's
kWh. Pure Python: no torch.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

from lab_utils import (
    assumptions,
    basics,
    energy,
    hardware,
    llms,
    memory,
    prices,
    replica,
    serverless,
    serving,
)
from lab_utils.advisor_options import (
    Option,
)

_SECONDS_PER_DAY = 24 * prices.SECONDS_PER_HOUR
_SECONDS_PER_MONTH = basics.HOURS_PER_MONTH * prices.SECONDS_PER_HOUR


@dataclass(frozen=True)
class _ServeJob:
    """One serving job, checked: what every part of :func:`serve` asks the calculators about."""

    config: llms.LLMConfig
    rate_per_s: float
    input_tokens: int
    output_tokens: int
    latency_target_s: float
    precisions: tuple[str, ...]
    batch: int | None
    utilisation: float
    efficiency: float
    engine: str | None
    max_devices: int
    price_bound_load_share: float
    cold_start_bound_ratio: float
    servers: dict = field(default_factory=dict, compare=False, repr=False)  # see estimates()
    replicas: dict = field(default_factory=dict, compare=False, repr=False)  # see replica()
    simulated: dict = field(default_factory=dict, compare=False, repr=False)  # see replica_at()

    @property
    def tokens_per_request(self) -> int:
        return self.input_tokens + self.output_tokens

    def precisions_for(self, spec) -> tuple[str, ...]:
        """The precisions tried on ``spec``: a CPU's first one; a GPU's all, but fp8 only where it
        has FP8 units (a T4 or an A100 serves 8-bit weights as int8), unless fp8 was all asked."""
        if spec.kind != "gpu":
            return self.precisions[:1]
        usable = tuple(p for p in self.precisions if p != "fp8" or "fp8" in spec.peak_flops)
        return usable or self.precisions

    def shape(self, precision: str) -> dict:
        """The keywords ``serving.estimate`` and friends take for this job in ``precision``."""
        return dict(
            prompt_len=max(1, self.input_tokens),
            output_len=self.output_tokens,
            precision=precision,
            efficiency=self.efficiency,
            engine=self.engine,
        )

    def replica(self, precision: str):
        """``memory.job_estimate`` of the weights in ``precision`` and one request's KV cache,
        worked out once per precision: every device and serverless class asks (its size, and the
        weights a cold start loads)."""
        if precision not in self.replicas:
            self.replicas[precision] = memory.job_estimate(
                self.config, method="inference", precision=precision, batch=1, seq_len=self.tokens_per_request
            )
        return self.replicas[precision]

    def replica_bytes(self, precision: str) -> float:
        """Bytes of the weights in ``precision`` and one request's KV cache (:meth:`replica`)."""
        return self.replica(precision).total_bytes

    def batch_bytes(self, precision: str, batch: int) -> float:
        """Bytes a replica holds serving ``batch`` requests: one request's plus the other caches."""
        return self.replica_bytes(precision) + (batch - 1) * serving.kv_bytes_per_sequence(
            self.config, context_len=self.tokens_per_request
        )

    def estimates(self, device, precision: str) -> serving.Estimates:
        """``serving.Estimates`` of this job on ``device`` (a replica) in ``precision``, made once
        and kept: the always-on server and a serverless worker of the same GPUs ask the same."""
        key = (device.name, precision)
        if key not in self.servers:
            self.servers[key] = serving.Estimates(
                self.config, device=device, usd_per_hour=0.0, **self.shape(precision)
            )
        return self.servers[key]

    def replica_at(self, spec, n_devices: int, precision: str, rate_per_s: float, n_requests: int):
        """``replica.at_rate`` of ``n_requests`` of this job on one replica of ``n_devices`` x
        ``spec`` at Poisson ``rate_per_s``, simulated once per :func:`serve` call and kept."""
        key = (spec.name, n_devices, precision, rate_per_s, n_requests)
        if key not in self.simulated:
            self.simulated[key] = replica.at_rate(
                self.config,
                device=spec,
                n_devices=n_devices,
                rate_per_s=rate_per_s,
                n_requests=n_requests,
                prompt_len=max(1, self.input_tokens),
                output_len=self.output_tokens,
                precision=precision,
                engine=self.engine,
                usd_per_hour=0.0,
            )
        return self.simulated[key]

    def p95_at(self, spec, n_devices: int, precision: str, rate_per_s: float) -> float:
        """The 95th-percentile latency of a request (arrival to last token) on one replica of
        ``n_devices`` x ``spec`` at Poisson ``rate_per_s``: ``replica.at_rate`` over the
        ``replica_requests`` assumption's requests, the times divided by ``efficiency``. Where
        fewer than the ``light_load_share`` assumption's share of the requests would share the
        replica with another (Poisson: 1 - exp(-2 x rate x one request's latency)), the p95 is
        one request's latency alone, and that one request is all that is simulated."""
        alone_s = self.replica_at(spec, n_devices, precision, rate_per_s, 1).e2e.p95
        if 1 - math.exp(-2 * rate_per_s * alone_s) < assumptions.value("light_load_share"):
            return alone_s / self.efficiency
        n_requests = assumptions.value("replica_requests")
        return self.replica_at(spec, n_devices, precision, rate_per_s, n_requests).e2e.p95 / self.efficiency

    def worker_p95(self, spec, n_devices: int, precision: str, result: serverless.SimulationResult) -> float:
        """The 95th-percentile latency of the requests of ``result`` (``serverless.simulate`` of
        workers of ``n_devices`` x ``spec``), each request's wait for a worker (queue and cold
        start) plus a time inside the worker from the replica simulator
        (``serverless.latencies_with_worker_times_s``): ``replica.at_rate`` at the rate one busy
        worker sees (``serverless.requests_per_busy_worker_s``), over the ``replica_requests``
        assumption's requests, the times divided by ``efficiency``. Where fewer than the
        ``light_load_share`` of the requests started on a worker serving another
        (``serverless.shared_start_share``), as :meth:`p95_at`'s light load, the time inside is
        one request's alone."""
        alone_s = self.replica_at(spec, n_devices, precision, self.rate_per_s, 1).e2e.p95
        if not result.waits_s:
            return alone_s / self.efficiency
        if serverless.shared_start_share(result) < assumptions.value("light_load_share"):
            in_worker_s = [alone_s / self.efficiency]
        else:
            rate_per_s = serverless.requests_per_busy_worker_s(result)
            n_requests = assumptions.value("replica_requests")
            simulated = self.replica_at(spec, n_devices, precision, rate_per_s, n_requests)
            in_worker_s = [r.e2e_s / self.efficiency for r in simulated.requests]
        return serverless.percentile(serverless.latencies_with_worker_times_s(result, in_worker_s), 95)

    def served_batch(self, device, precision: str):
        """``serving.estimate`` at the batch a replica runs: ``batch`` when given, else the
        largest that keeps a request within the target (``serving.capacity``), at least 1."""
        server = self.estimates(device, precision)
        if self.batch is not None:
            return server.at(self.batch)
        return server.capacity(self.latency_target_s) or server.at(1)


@dataclass(frozen=True)
class _Priced:
    """An option of one precision whose cost, and all else deciding whether it works but its
    latency, is known: ``finish()`` simulates the latency and gives the :class:`Option`."""

    cost_usd: float | None  # None: known not to work before its latency (no price; its waits too long)
    finish: Callable[[], Option]


def _best_precision(candidates: list[Option | _Priced]) -> Option:
    """The cheapest working option of one device, the better precision first on a tie (the
    candidates come in quality order); the first one when none works. A :class:`_Priced`
    candidate's latency is simulated only when it decides: the priced ones are finished
    cheapest first (on a tie, in quality order) until one works, so a device whose cheapest
    precision meets the target simulates that one alone."""
    finished: dict[int, Option] = {}

    def option(i: int) -> Option:
        if i not in finished:
            candidate = candidates[i]
            finished[i] = candidate if isinstance(candidate, Option) else candidate.finish()
        return finished[i]

    def cost(i: int) -> float | None:
        candidate = candidates[i]
        if isinstance(candidate, _Priced):
            return candidate.cost_usd
        return candidate.cost_per_month_usd if candidate.works else None

    hopeful = sorted((i for i in range(len(candidates)) if cost(i) is not None), key=lambda i: (cost(i), i))
    for i in hopeful:
        if option(i).works and option(i).cost_per_month_usd is not None:
            return option(i)
    return option(0)


def _kwh(device_hours: float, spec: hardware.Spec) -> float | None:
    """kWh of ``device_hours`` of ``spec`` at its TDP (``energy.job_energy_kwh``); None without one."""
    return energy.job_energy_kwh(device_hours, 1, spec.tdp_watts) if spec.tdp_watts else None


def _has_peak(spec: hardware.Spec) -> bool:
    """Whether the catalog has a peak of ``spec`` in a dtype it computes in (``basics.peak_flops``)."""
    try:
        basics.peak_flops(spec)
    except ValueError:
        return False
    return True
