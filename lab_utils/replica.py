"""One serving replica simulated request by request: what users wait at a request rate.

:func:`simulate` runs the step loop of a continuous-batching engine as vLLM's scheduler runs it.
Each step, every running sequence that has finished its prompt makes one token (a decode); the
token budget left (``max_num_batched_tokens``) goes to prompts, in arrival order: first to those
part-way through their prompt, then to waiting requests while fewer than ``max_num_seqs`` run and
the KV cache has blocks for them. With chunked prefill a prompt is cut to what the budget leaves
and shares the step with the decodes (so decode steps slow while prompts arrive); without it a
step either prefills whole prompts or decodes (vLLM's older scheduler). When a decode needs a new
KV block and none is free, the most recently admitted sequence is preempted: its blocks are freed
and it waits again at the head of the queue, to recompute its prompt and the tokens it had made.

A step's time is the roofline bound of :func:`serving.step` (its decodes at their mean context,
its prompt chunks after their cached prefix) turned into an engine's time by
:func:`engines.step_time`; a request also waits the engine's ``per_request_s`` once, before the
scheduler sees it. Step times are worked out once per (decodes, mean context to
``context_bucket`` tokens, chunks) and kept across simulations of the same job
(:mod:`lab_utils.replica_steps`, with the KV cache's size), and the scheduler takes runs of
decode-only steps at once (:mod:`lab_utils.scheduler`), so a 6,000-request trace takes about
0.2 s here and the 100-request runs ``pick serve`` asks for a few milliseconds each.

The levers, each a keyword whose default is an assumption (``lab_utils/data/assumptions.toml``):
``chunked_prefill`` and ``max_num_batched_tokens``; ``prefix_hit`` (the share of each prompt
found in the prefix cache: it skips prefill and its KV blocks are shared); speculative decoding
(``spec_tokens`` k drafted per step, accepted with probability ``spec_acceptance`` a each, so a
verify step makes (1 - a^(k+1)) / (1 - a) tokens on average, plus ``spec_draft_model``'s k decode
steps, or none for n-gram lookup); ``kv_bytes_per_value`` (fp8 KV apart from the weights);
``max_num_seqs`` and ``gpu_memory_utilization`` (the KV cache gets memory x utilization less the
weights and the CUDA context). Pure Python, deterministic: no torch, no clock.

>>> result = simulate("Llama-3.1-8B", device="H100 SXM", requests=[(0.0, 6000, 100)] * 2)
>>> result.requests[0].ttft_s < result.requests[1].ttft_s  # the budget (8,192 tokens) cuts the second prompt
True
"""

from __future__ import annotations

import collections
import math
from dataclasses import dataclass

from lab_utils import (
    assumptions,
    checks,
    engines,
    hardware,
    llms,
    prices,
    replica_steps,
    scheduler,
    serverless,
    serving,
)
from lab_utils.replica_steps import kv_capacity_tokens  # named here, its home beside the step times

__all__ = [
    "Percentiles",
    "ReplicaResult",
    "RequestTimes",
    "at_concurrency",
    "at_rate",
    "closed_loop",
    "kv_capacity_tokens",
    "simulate",
    "summarize",
    "tokens_per_verify_step",
]


@dataclass(frozen=True)
class RequestTimes:
    """One request, in seconds from its arrival: ``ttft_s`` (its first token), ``e2e_s`` (its
    last), ``queue_s`` (until a step first scheduled it), ``tpot_s`` ((e2e - ttft) / (output - 1),
    as ``vllm bench serve`` counts it; 0 for one output token) and ``preemptions``."""

    arrival_s: float
    prompt_tokens: int
    output_tokens: int
    ttft_s: float
    e2e_s: float
    queue_s: float
    tpot_s: float
    preemptions: int


@dataclass(frozen=True)
class Percentiles:
    """p50, p90, p95 and p99 of one latency, in seconds (linear interpolation)."""

    p50: float
    p90: float
    p95: float
    p99: float

    @classmethod
    def of(cls, values) -> Percentiles:
        values = list(values)
        return cls(*(serverless.percentile(values, q) for q in (50, 90, 95, 99)))


@dataclass(frozen=True)
class ReplicaResult:
    """What a replica served: per-request ``requests`` (in arrival order), the percentiles of
    ``ttft``, ``tpot``, ``e2e`` and ``queue``; ``duration_s`` from the first arrival to the last
    token; ``output_tokens_per_s`` and ``requests_per_s`` over it; ``goodput_requests_per_s``
    (requests meeting both ``slo_ttft_s`` and ``slo_tpot_s``, per second); ``usd_per_hour`` of
    the replica and ``usd_per_million_tokens`` (prompt and output tokens, the replica billed for
    ``duration_s``; None without a price); ``steps``, ``preemptions``, ``kv_capacity_tokens``,
    ``engine``, ``notes`` (figures taken from a neighbouring regime) and ``assumptions`` (the
    (name, value) of each assumption taken)."""

    model: str
    device: str
    engine: str
    requests: tuple[RequestTimes, ...]
    ttft: Percentiles
    tpot: Percentiles
    e2e: Percentiles
    queue: Percentiles
    duration_s: float
    output_tokens_per_s: float
    requests_per_s: float
    goodput_requests_per_s: float
    slo_ttft_s: float
    slo_tpot_s: float
    usd_per_hour: float | None
    usd_per_million_tokens: float | None
    steps: int
    preemptions: int
    kv_capacity_tokens: int
    notes: tuple[str, ...] = ()
    assumptions: tuple[tuple[str, object], ...] = ()

    def summary(self) -> dict:
        """The figures ``lab-utils latency --json`` prints, by their JSON names."""
        return dict(
            ttft_p50_s=self.ttft.p50,
            ttft_p99_s=self.ttft.p99,
            tpot_p50_s=self.tpot.p50,
            tpot_p99_s=self.tpot.p99,
            e2e_p50_s=self.e2e.p50,
            output_tokens_per_s=self.output_tokens_per_s,
            requests_per_s=self.requests_per_s,
            goodput_requests_per_s=self.goodput_requests_per_s,
            usd_per_million_tokens=self.usd_per_million_tokens,
        )


def tokens_per_verify_step(spec_tokens: int, acceptance: float) -> float:
    """Tokens a sequence makes per verify step of speculative decoding with ``spec_tokens`` k
    drafted, each accepted with probability ``acceptance`` a until the first rejection:
    (1 - a^(k+1)) / (1 - a), which is k + 1 at a = 1 and 1 at a = 0.

    >>> tokens_per_verify_step(3, 0.0), tokens_per_verify_step(3, 1.0), tokens_per_verify_step(3, 0.5)
    (1.0, 4.0, 1.875)
    """
    k = checks.count("spec_tokens", spec_tokens, minimum=0)
    a = checks.fraction("spec_acceptance", acceptance)
    return float(k + 1) if a == 1.0 else (1 - a ** (k + 1)) / (1 - a)


def _vllm_default(name: str, spec: hardware.Spec):
    """vLLM's server default of ``name`` for ``spec``: the ``large`` entry on GPUs of 70 GiB or
    more that are not A100s, else ``other`` (vLLM's EngineArgs.get_batch_defaults)."""
    rule = assumptions.value(name)
    large = (spec.memory_bytes or 0) >= 70 * 2**30 and "A100" not in spec.name
    return rule["large" if large else "other"]


def _spec(spec_tokens, spec_acceptance) -> tuple[int, float]:
    """(tokens a decode computes per step, tokens it keeps on average)."""
    if not spec_tokens:
        return 1, 1.0
    if spec_acceptance is None:
        raise ValueError("spec_acceptance: give the acceptance rate (0 to 1) with spec_tokens")
    return spec_tokens + 1, tokens_per_verify_step(spec_tokens, spec_acceptance)


def simulate(
    model,
    *,
    device,
    requests,
    n_devices=1,
    precision=None,
    engine=None,
    weight_bytes_per_param=None,
    kv_bytes_per_value=None,
    chunked_prefill=None,
    max_num_batched_tokens=None,
    max_num_seqs=None,
    gpu_memory_utilization=None,
    kv_block_size=None,
    prefix_hit=None,
    spec_tokens=0,
    spec_acceptance=None,
    spec_draft_model=None,
    slo_ttft_s=None,
    slo_tpot_s=None,
    usd_per_hour=None,
    context_bucket=32,
    concurrency=None,
    kv_cache_tokens=None,
) -> ReplicaResult:
    """Serve ``requests`` ((arrival_s, prompt_tokens, output_tokens) each) on one replica of
    ``n_devices`` x ``device`` (ideal tensor parallelism, :func:`serving.replica`) with ``engine``
    (a name or an ``engines.Profile``; default the device's, :func:`engines.default_for`); the levers as
    in the module's docstring,
    each None for its assumption. ``concurrency`` C: a closed loop instead, C requests in flight
    from time 0, each finished one replaced by the next of ``requests`` (arrival times ignored),
    as ``vllm bench serve --max-concurrency C --request-rate inf`` runs. ``usd_per_hour``: the
    replica's price (default ``n_devices`` x the device's, ``assumptions.device_price``).
    ``kv_cache_tokens``: the KV cache's size in tokens (default :func:`kv_capacity_tokens`).
    ``context_bucket``: tokens the decodes' mean context is rounded to when caching step times."""
    config, base = llms.resolve(model), hardware.as_spec(device)
    spec = serving.replica(base, n_devices)
    profile = engine if isinstance(engine, engines.Profile) else engines.get(engine, device=spec)
    served = serving.resolve_precision(
        precision,
        device=spec,
        weight_bytes_per_param=weight_bytes_per_param,
        kv_bytes_per_value=kv_bytes_per_value,
        model=config,
    )
    values, taken = assumptions.resolve(
        chunked_prefill=chunked_prefill,
        kv_block_size=kv_block_size,
        prefix_hit=prefix_hit,
        slo_ttft_s=slo_ttft_s,
        slo_tpot_s=slo_tpot_s,
    )
    chunked = values["chunked_prefill"]
    if not isinstance(chunked, bool):
        raise TypeError(f"chunked_prefill must be True or False, got {chunked!r}")
    block_size = checks.count("kv_block_size", values["kv_block_size"])
    hit = checks.fraction("prefix_hit", values["prefix_hit"])
    if max_num_batched_tokens is None:
        taken["max_num_batched_tokens"] = max_num_batched_tokens = _vllm_default(
            "max_num_batched_tokens", base
        )
    if max_num_seqs is None:
        taken["max_num_seqs"] = max_num_seqs = _vllm_default("max_num_seqs", base)
    if gpu_memory_utilization is None and kv_cache_tokens is None:
        taken["gpu_memory_utilization"] = gpu_memory_utilization = assumptions.value("gpu_memory_utilization")
    budget = checks.count("max_num_batched_tokens", max_num_batched_tokens)
    max_seqs = checks.count("max_num_seqs", max_num_seqs)
    decode_tokens, gain = _spec(checks.count("spec_tokens", spec_tokens, minimum=0), spec_acceptance)
    if budget < max_seqs * decode_tokens:
        raise ValueError(
            f"max_num_batched_tokens={budget}: must be at least max_num_seqs x tokens per decode "
            f"({max_seqs} x {decode_tokens}), as vLLM requires"
        )
    job = replica_steps.job(config, spec, served, profile, spec_draft_model, decode_tokens)
    capacity = kv_cache_tokens if kv_cache_tokens is not None else job.capacity(gpu_memory_utilization)
    pending = scheduler.requests_from(requests, profile.per_request_s, hit, block_size)
    shared_blocks = max(r.prefix for r in pending) // block_size  # the shared prefix, held once
    capacity_blocks = checks.count("kv_cache_tokens", capacity, minimum=0) // block_size - shared_blocks
    if capacity_blocks < 1:
        raise ValueError(f"model={config.name!r}: its weights leave no KV cache on {spec.name}")
    bucket = checks.count("context_bucket", context_bucket)
    notes: dict[str, None] = {}
    timer = replica_steps.timer(job, notes)
    closed = None
    if concurrency is not None:
        clients = checks.count("concurrency", concurrency)
        for request in pending:
            request.arrival_s, request.ready_s = 0.0, profile.per_request_s
        closed = (profile.per_request_s, collections.deque(pending[clients:]))
        pending = pending[:clients]
        pending_all = pending + list(closed[1])
    else:
        pending_all = list(pending)
    replica = scheduler.Scheduler(
        timer, capacity_blocks, block_size, budget, max_seqs, chunked, (decode_tokens, gain), closed, bucket
    )
    replica.run(pending)
    return _result(
        config,
        spec,
        base,
        profile,
        pending_all,
        replica,
        values,
        taken,
        notes,
        n_devices,
        usd_per_hour,
        capacity,
    )


def _result(
    config, spec, base, profile, requests, replica, values, taken, notes, n_devices, usd_per_hour, capacity
):
    times = tuple(
        RequestTimes(
            arrival_s=r.arrival_s,
            prompt_tokens=r.prompt,
            output_tokens=r.output,
            ttft_s=r.first_s - r.arrival_s,
            e2e_s=r.finish_s - r.arrival_s,
            queue_s=r.scheduled_s - r.arrival_s,
            tpot_s=(r.finish_s - r.first_s) / (r.output - 1) if r.output > 1 else 0.0,
            preemptions=r.preemptions,
        )
        for r in sorted(requests, key=lambda r: r.index)
    )
    if usd_per_hour is None:  # the device's price, None where the data has none
        per_device = assumptions.device_price(base, n_gpus=n_devices).usd_per_hour
        usd_per_hour = None if per_device is None else n_devices * per_device
    return summarize(
        times,
        model=config.name,
        device=spec.name,
        engine=profile.name,
        steps=replica.steps,
        preemptions=replica.preemptions,
        kv_capacity_tokens=capacity,
        usd_per_hour=usd_per_hour,
        slo_ttft_s=values["slo_ttft_s"],
        slo_tpot_s=values["slo_tpot_s"],
        notes=tuple(notes),
        taken=taken,
    )


def summarize(
    times,
    *,
    model,
    device,
    engine,
    steps,
    preemptions=0,
    kv_capacity_tokens=0,
    usd_per_hour=None,
    slo_ttft_s=None,
    slo_tpot_s=None,
    notes=(),
    taken=None,
) -> ReplicaResult:
    """A :class:`ReplicaResult` from per-request ``times`` (:class:`RequestTimes`), simulated or
    measured (``lab_utils.batching``): percentiles, rates over the span from the first arrival
    to the last token, goodput under the SLAs (None: their assumptions) and $ per 1M tokens;
    ``taken``: the assumptions the run took, {name: value}."""
    times = tuple(times)
    values, slo_taken = assumptions.resolve(slo_ttft_s=slo_ttft_s, slo_tpot_s=slo_tpot_s)
    slo_ttft = checks.number("slo_ttft_s", values["slo_ttft_s"])
    slo_tpot = checks.number("slo_tpot_s", values["slo_tpot_s"])
    duration_s = max(t.arrival_s + t.e2e_s for t in times) - min(t.arrival_s for t in times)
    good = sum(1 for t in times if t.ttft_s <= slo_ttft and t.tpot_s <= slo_tpot)
    tokens = sum(t.prompt_tokens + t.output_tokens for t in times)
    per_s = (lambda x: x / duration_s) if duration_s > 0 else (lambda x: math.inf)
    return ReplicaResult(
        model=model,
        device=device,
        engine=engine,
        requests=times,
        ttft=Percentiles.of(t.ttft_s for t in times),
        tpot=Percentiles.of(t.tpot_s for t in times),
        e2e=Percentiles.of(t.e2e_s for t in times),
        queue=Percentiles.of(t.queue_s for t in times),
        duration_s=duration_s,
        output_tokens_per_s=per_s(sum(t.output_tokens for t in times)),
        requests_per_s=per_s(len(times)),
        goodput_requests_per_s=per_s(good),
        slo_ttft_s=slo_ttft,
        slo_tpot_s=slo_tpot,
        usd_per_hour=usd_per_hour,
        usd_per_million_tokens=None
        if usd_per_hour is None or duration_s <= 0
        else prices.usd_per_million_tokens(usd_per_hour, tokens / duration_s),
        steps=steps,
        preemptions=preemptions,
        kv_capacity_tokens=kv_capacity_tokens,
        notes=tuple(notes),
        assumptions=tuple({**(taken or {}), **slo_taken}.items()),
    )


def closed_loop(n_requests: int, prompt_tokens: int, output_tokens: int) -> list[tuple[float, int, int]]:
    """``n_requests`` requests of fixed lengths for a closed loop (``simulate(concurrency=...)``
    sets their arrivals as the loop sends them)."""
    n = checks.count("n_requests", n_requests)
    return [
        (0.0, checks.count("prompt_tokens", prompt_tokens), checks.count("output_tokens", output_tokens))
    ] * n


def at_rate(
    model, *, device, rate_per_s, prompt_len, output_len, n_requests=None, seed=0, **options
) -> ReplicaResult:
    """:func:`simulate` of Poisson arrivals at ``rate_per_s`` of requests of fixed lengths:
    ``n_requests`` of them (default the ``latency_trace_s`` assumption's worth, at least 100),
    from ``serverless.poisson_arrivals`` with ``seed``; ``options`` go to :func:`simulate`."""
    rate = checks.number("rate_per_s", rate_per_s)
    trace_s = assumptions.value("latency_trace_s")
    n = max(100, round(rate * trace_s)) if n_requests is None else checks.count("n_requests", n_requests)
    duration_s = 1.5 * n / rate + 10.0 / rate
    arrivals = serverless.poisson_arrivals(rate, duration_s, seed=seed)
    while len(arrivals) < n:  # pragma: no cover - Poisson shortfalls of a third are rare
        duration_s *= 2
        arrivals = serverless.poisson_arrivals(rate, duration_s, seed=seed)
    requests = [(t, prompt_len, output_len) for t in arrivals[:n]]
    return simulate(model, device=device, requests=requests, **options)


def at_concurrency(
    model, *, device, concurrency, prompt_len, output_len, n_requests=None, **options
) -> ReplicaResult:
    """:func:`simulate` of a closed loop keeping ``concurrency`` requests of fixed lengths in
    flight (``vllm bench serve --max-concurrency C --request-rate inf``): ``n_requests`` in all
    (default the ``client_requests`` assumption x ``concurrency``)."""
    clients = checks.count("concurrency", concurrency)
    n = clients * assumptions.value("client_requests") if n_requests is None else n_requests
    return simulate(
        model,
        device=device,
        requests=closed_loop(n, prompt_len, output_len),
        concurrency=clients,
        **options,
    )
