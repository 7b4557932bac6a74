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
scheduler sees it. Step times are cached by (decodes, mean context to ``context_bucket`` tokens,
chunks), so a 6,000-request trace takes about a second.

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
import heapq
import math
from dataclasses import dataclass

from lab_utils import assumptions, checks, engines, hardware, llms, prices, serverless, serving

__all__ = [
    "Percentiles",
    "ReplicaResult",
    "RequestTimes",
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
    """p50, p90 and p99 of one latency, in seconds (linear interpolation)."""

    p50: float
    p90: float
    p99: float

    @classmethod
    def of(cls, values) -> Percentiles:
        values = list(values)
        return cls(*(serverless.percentile(values, q) for q in (50, 90, 99)))


@dataclass(frozen=True)
class ReplicaResult:
    """What a replica served: per-request ``requests`` (in arrival order), the percentiles of
    ``ttft``, ``tpot``, ``e2e`` and ``queue``; ``duration_s`` from the first arrival to the last
    token; ``output_tokens_per_s`` and ``requests_per_s`` over it; ``goodput_requests_per_s``
    (requests meeting both ``slo_ttft_s`` and ``slo_tpot_s``, per second); ``usd_per_hour`` of
    the replica and ``usd_per_million_tokens`` (prompt and output tokens, the replica billed for
    ``duration_s``; None without a price); ``steps``, ``preemptions``, ``kv_capacity_tokens``,
    ``engine`` and ``notes`` (figures taken from a neighbouring regime, assumptions taken)."""

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


def kv_capacity_tokens(
    model,
    *,
    device,
    precision=None,
    kv_bytes_per_value=None,
    gpu_memory_utilization=None,
    weight_bytes_per_param=None,
) -> int:
    """Tokens the KV cache holds: (memory x ``gpu_memory_utilization`` - weights - the
    ``cuda_context_bytes`` reserve) / KV bytes per token; 0 when the weights do not fit."""
    config, spec = llms.as_config(model), hardware.as_spec(device)
    served = serving.resolve_precision(
        precision,
        device=spec,
        weight_bytes_per_param=weight_bytes_per_param,
        kv_bytes_per_value=kv_bytes_per_value,
    )
    share = assumptions.resolve(gpu_memory_utilization=gpu_memory_utilization)[0]["gpu_memory_utilization"]
    share = checks.number("gpu_memory_utilization", share, maximum=1.0)
    free = (
        (spec.memory_bytes or 0) * share
        - assumptions.value("cuda_context_bytes")
        - config.n_params * served.weight_bytes_per_param
    )
    per_token = serving.kv_bytes_per_sequence(
        config, context_len=1, kv_bytes_per_value=served.kv_bytes_per_value
    )
    return max(0, math.floor(free / per_token))


class _Request:
    __slots__ = (
        "index",
        "arrival_s",
        "ready_s",
        "prompt",
        "output",
        "prefix",
        "computed",
        "target",
        "made",
        "blocks",
        "first_s",
        "scheduled_s",
        "preemptions",
        "finish_s",
    )

    def __init__(self, index, arrival_s, ready_s, prompt, output, prefix):
        self.index, self.arrival_s, self.ready_s = index, arrival_s, ready_s
        self.prompt, self.output, self.prefix = prompt, output, prefix
        self.computed = prefix  # tokens in the KV cache (the shared prefix is found there)
        self.target = prompt  # tokens to compute before the next token is sampled
        self.made = 0.0  # output tokens made (fractional under speculative decoding)
        self.blocks = 0  # KV blocks of its own (the shared prefix's are counted once)
        self.first_s = self.scheduled_s = self.finish_s = None
        self.preemptions = 0


def _requests(requests, per_request_s, prefix_hit, block_size) -> list[_Request]:
    made = []
    for index, item in enumerate(checks.sequence("requests", requests)):
        if len(item) != 3:
            raise ValueError(f"requests[{index}]={item!r}: give (arrival_s, prompt_tokens, output_tokens)")
        arrival = checks.number(f"requests[{index}] arrival_s", item[0], strict=False)
        prompt = checks.count(f"requests[{index}] prompt_tokens", item[1])
        output = checks.count(f"requests[{index}] output_tokens", item[2])
        prefix = min((math.floor(prefix_hit * prompt) // block_size) * block_size, prompt - 1)
        made.append(_Request(index, arrival, arrival + per_request_s, prompt, output, prefix))
    if not made:
        raise ValueError("requests is empty: give at least one (arrival_s, prompt_tokens, output_tokens)")
    return made


class _Replica:
    """The scheduler's state and its step loop (see the module's docstring)."""

    def __init__(self, timer, capacity_blocks, block_size, budget, max_seqs, chunked, spec, closed=None):
        self.timer, self.capacity, self.block_size = timer, capacity_blocks, block_size
        self.budget, self.max_seqs, self.chunked = budget, max_seqs, chunked
        self.decode_tokens, self.gain = spec  # tokens a decode computes in a step, and keeps
        self.closed = closed  # a closed loop: (per_request_s, the requests left to send), else None
        self.arrivals: list = []
        self.free = capacity_blocks
        self.running: dict[int, _Request] = {}  # in admission order (preemption takes the last)
        self.waiting: collections.deque[_Request] = collections.deque()
        self.clock, self.steps, self.preemptions = 0.0, 0, 0

    def _blocks_for(self, request: _Request, tokens: float) -> int:
        return math.ceil((tokens - request.prefix) / self.block_size)

    def _grow(self, request: _Request, tokens: float) -> bool:
        """Give ``request`` the blocks ``tokens`` in its cache need; False when there are none."""
        need = self._blocks_for(request, tokens) - request.blocks
        if need > self.free:
            return False
        self.free -= max(0, need)
        request.blocks += max(0, need)
        return True

    def _preempt(self, request: _Request) -> None:
        del self.running[request.index]
        self.free += request.blocks
        request.blocks, request.computed = 0, request.prefix
        request.target = request.prompt + math.floor(request.made)  # recompute what it had made
        request.preemptions += 1
        self.preemptions += 1
        self.waiting.appendleft(request)

    def _decodes(self) -> list[_Request]:
        """The running sequences past their prompt, each given the block its next tokens need;
        the latest admitted are preempted while blocks run short."""
        decoding = [r for r in self.running.values() if r.computed >= r.target]
        for request in decoding:
            while request.index in self.running and not self._grow(request, request.computed + self.gain):
                self._preempt(next(reversed(self.running.values())))
        return [r for r in decoding if r.index in self.running]

    def _chunks(self, budget: int) -> list[tuple[_Request, int]]:
        """Prompt tokens this step computes: the running prompts first, then waiting requests."""
        chunks = []
        for request in list(self.running.values()):
            if budget and request.index in self.running and request.computed < request.target:
                tokens = min(request.target - request.computed, budget)
                while request.index in self.running and not self._grow(request, request.computed + tokens):
                    self._preempt(next(reversed(self.running.values())))
                if request.index in self.running:
                    chunks.append((request, tokens))
                    budget -= tokens
        while self.waiting and budget and len(self.running) < self.max_seqs:
            request = self.waiting[0]
            if request.ready_s > self.clock:
                break
            tokens = request.target - request.computed
            if self.chunked:
                tokens = min(tokens, budget)
            elif tokens > budget and chunks:
                break
            if not self._grow(request, request.computed + tokens):
                break
            self.waiting.popleft()
            self.running[request.index] = request
            if request.scheduled_s is None:
                request.scheduled_s = self.clock
            chunks.append((request, tokens))
            budget = max(0, budget - tokens)
        return chunks

    def step(self) -> bool:
        """One step; False when nothing could be scheduled."""
        decoding = self._decodes()
        left = self.budget - len(decoding) * self.decode_tokens if self.chunked else self.budget
        chunks = self._chunks(left)
        if not self.chunked and chunks:
            decoding = []  # a prefill step: the decodes wait
        if not decoding and not chunks:
            return False
        self.clock += self.timer(decoding, chunks)
        self.steps += 1
        for request in decoding:
            request.made = min(request.output, request.made + self.gain)
            request.computed += self.gain
            self._done_or_next(request)
        for request, tokens in chunks:
            request.computed += tokens
            if request.computed >= request.target:
                if request.first_s is None:
                    request.first_s = self.clock
                request.made = min(
                    request.output, math.floor(request.made) + 1.0
                )  # its last position samples
                self._done_or_next(request)
        return True

    def _done_or_next(self, request: _Request) -> None:
        if request.made >= request.output:
            request.finish_s = self.clock
            del self.running[request.index]
            self.free += request.blocks
            if self.closed is not None and self.closed[1]:
                newcomer = self.closed[1].popleft()
                newcomer.arrival_s, newcomer.ready_s = self.clock, self.clock + self.closed[0]
                heapq.heappush(self.arrivals, (newcomer.ready_s, newcomer.index, newcomer))
        else:
            request.target = request.computed  # decoding: each step makes its token(s)

    def run(self, pending: list[_Request]) -> None:
        """Steps until every request is done; idle time jumps to the next arrival."""
        self.arrivals = arrivals = [(r.ready_s, r.index, r) for r in pending]
        heapq.heapify(arrivals)
        while arrivals or self.waiting or self.running:
            while arrivals and arrivals[0][0] <= self.clock:
                self.waiting.append(heapq.heappop(arrivals)[2])
            if not self.running and not any(r.ready_s <= self.clock for r in self.waiting):
                upcoming = [r.ready_s for r in self.waiting] + [arrivals[0][0]] * bool(arrivals)
                if not upcoming:
                    raise RuntimeError("replica: nothing can run")  # pragma: no cover
                self.clock = max(self.clock, min(upcoming))
                continue
            if not self.step():
                head = self.waiting[0]
                raise ValueError(
                    f"a request of {head.target} tokens needs more KV cache than the replica holds "
                    f"({self.capacity * self.block_size} tokens)"
                )


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
    (default the device's, :func:`engines.default_for`); the levers as in the module's docstring,
    each None for its assumption. ``concurrency`` C: a closed loop instead, C requests in flight
    from time 0, each finished one replaced by the next of ``requests`` (arrival times ignored),
    as ``vllm bench serve --max-concurrency C --request-rate inf`` runs. ``usd_per_hour``: the
    replica's price (default ``n_devices`` x the device's, ``assumptions.device_price``).
    ``kv_cache_tokens``: the KV cache's size in tokens (default :func:`kv_capacity_tokens`).
    ``context_bucket``: tokens the decodes' mean context is rounded to when caching step times."""
    config, base = llms.as_config(model), hardware.as_spec(device)
    spec = serving.replica(base, n_devices)
    profile = engines.get(engine, device=spec)
    served = serving.resolve_precision(
        precision,
        device=spec,
        weight_bytes_per_param=weight_bytes_per_param,
        kv_bytes_per_value=kv_bytes_per_value,
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
    budget = checks.count(
        "max_num_batched_tokens",
        _vllm_default("max_num_batched_tokens", base)
        if max_num_batched_tokens is None
        else max_num_batched_tokens,
    )
    max_seqs = checks.count(
        "max_num_seqs", _vllm_default("max_num_seqs", base) if max_num_seqs is None else max_num_seqs
    )
    decode_tokens, gain = _spec(checks.count("spec_tokens", spec_tokens, minimum=0), spec_acceptance)
    if budget < max_seqs * decode_tokens:
        raise ValueError(
            f"max_num_batched_tokens={budget}: must be at least max_num_seqs x tokens per decode "
            f"({max_seqs} x {decode_tokens}), as vLLM requires"
        )
    capacity = (
        kv_cache_tokens
        if kv_cache_tokens is not None
        else kv_capacity_tokens(
            config,
            device=spec,
            precision=served.name,
            weight_bytes_per_param=served.weight_bytes_per_param,
            kv_bytes_per_value=served.kv_bytes_per_value,
            gpu_memory_utilization=gpu_memory_utilization,
        )
    )
    pending = _requests(requests, profile.per_request_s, hit, block_size)
    shared_blocks = max(r.prefix for r in pending) // block_size  # the shared prefix, held once
    capacity_blocks = checks.count("kv_cache_tokens", capacity, minimum=0) // block_size - shared_blocks
    if capacity_blocks < 1:
        raise ValueError(f"model={config.name!r}: its weights leave no KV cache on {spec.name}")
    bucket = checks.count("context_bucket", context_bucket)
    shape = dict(
        device=spec,
        precision=served.name,
        weight_bytes_per_param=served.weight_bytes_per_param,
        kv_bytes_per_value=served.kv_bytes_per_value,
    )
    notes: dict[str, None] = {}

    def engine_s(bound: serving.StepBound) -> float:
        time = engines.step_time(
            profile,
            compute_s=bound.compute_s,
            memory_s=bound.memory_s,
            compute_dtype=bound.compute_dtype,
            weight_bytes_per_param=served.weight_bytes_per_param,
        )
        notes.update(dict.fromkeys(time.notes))
        return time.seconds

    cache: dict = {}

    def timer(decoding, chunks) -> float:
        n = len(decoding)
        context = max(1, round(sum(r.computed for r in decoding) / n / bucket) * bucket) if n else 0
        key = (n, context, tuple(sorted((tokens, int(r.computed)) for r, tokens in chunks)))
        if key not in cache:
            verify = [(decode_tokens, context)] * n if decode_tokens > 1 else []
            decodes = {context: n} if n and decode_tokens == 1 else {}
            bound = serving.step(
                config, decode_contexts=decodes, prefill_chunks=list(key[2]) + verify, **shape
            )
            seconds = engine_s(bound)
            if n and spec_draft_model is not None and decode_tokens > 1:
                draft = serving.step(spec_draft_model, decode_contexts={context: n}, **shape)
                seconds += (decode_tokens - 1) * engine_s(draft)
            cache[key] = seconds
        return cache[key]

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
    replica = _Replica(
        timer, capacity_blocks, block_size, budget, max_seqs, chunked, (decode_tokens, gain), closed
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
    if usd_per_hour is None:
        usd_per_hour = n_devices * assumptions.device_price(base, n_gpus=n_devices).usd_per_hour
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
        notes=tuple(notes) + tuple(assumptions.lines(taken)),
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
) -> ReplicaResult:
    """A :class:`ReplicaResult` from per-request ``times`` (:class:`RequestTimes`), simulated or
    measured (``lab_utils.batching``): percentiles, rates over the span from the first arrival
    to the last token, goodput under the SLAs (None: their assumptions) and $ per 1M tokens."""
    times = tuple(times)
    values = assumptions.resolve(slo_ttft_s=slo_ttft_s, slo_tpot_s=slo_tpot_s)[0]
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
    )


def closed_loop(n_requests: int, prompt_tokens: int, output_tokens: int) -> list[tuple[float, int, int]]:
    """``n_requests`` requests of fixed lengths for a closed loop (``simulate(concurrency=...)``
    sets their arrivals as the loop sends them)."""
    n = checks.count("n_requests", n_requests)
    return [
        (0.0, checks.count("prompt_tokens", prompt_tokens), checks.count("output_tokens", output_tokens))
    ] * n
