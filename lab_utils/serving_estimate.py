"""One server's answer at a batch: time to first token, time per output token, tokens/s, energy
and dollars per million tokens (:func:`estimate`, :class:`ServingEstimate`), and
:class:`Estimates`, one model's server worked out once and asked at many batches. Part of
``lab_utils.serving``, which names all of it."""

from __future__ import annotations

import functools
from dataclasses import dataclass

from lab_utils import assumptions, basics, checks, energy, engines, hardware, llms, memory, prices
from lab_utils.serving_bounds import (
    _device,
    _limit,
    _resolved_decode_parts,
    _resolved_prefill_s,
    _step_inputs,
    _step_s,
    max_batch,
    prefill_s,
    resolve_precision,
    routing,
)


@dataclass(frozen=True)
class ServingEstimate:
    """One device serving a request mix with ``batch`` sequences in flight (continuous batching).

    ``ttft_s``: time to first token of a request (its prefill alone, an empty queue);
    ``tpot_s``: time per output token of a sequence (one decode step plus its share of the
    newcomers' prefills); ``latency_s``: one request start to finish in a full batch
    (= output_len x tpot_s); ``tokens_per_s``: prompt + output tokens served per second,
    ``output_tokens_per_s`` the generated ones; ``requests_per_s``; ``limit``: what bounds
    the decode step; ``usd_per_hour`` (None without a price), ``usd_per_million_tokens``
    (prompt and output tokens alike; None without a price) and ``price_source``;
    ``engine``: the profile applied to the bounds (``lab_utils.engines``; "bound": none) and
    ``engine_notes``: the parts it leaves at the bound for want of a published figure;
    ``watts``: the device's power while busy (TDP x ``power_share_of_tdp``; None without a
    TDP), from which ``output_tokens_per_joule`` and ``joules_per_output_token`` (estimates,
    lab_utils.energy); ``precision`` and ``compute_dtype``: how the model was served
    (:func:`resolve_precision`; "checkpoint (mxfp4)" names the published format); ``kv_layout``:
    how its KV cache was sized (``memory.kv_layout``); ``routing``: for a mixture of experts,
    the routing its decode step assumes (empty for a dense model).
    """

    model: str
    device: str
    batch: int
    prompt_len: int
    output_len: int
    ttft_s: float
    tpot_s: float
    latency_s: float
    tokens_per_s: float
    output_tokens_per_s: float
    requests_per_s: float
    limit: str
    usd_per_hour: float | None
    price_source: str
    engine: str
    watts: float | None = None
    precision: str = "bf16"
    compute_dtype: str = "bf16"
    engine_notes: tuple[str, ...] = ()
    kv_layout: str = ""
    routing: str = ""

    @property
    def output_tokens_per_joule(self) -> float | None:
        return None if self.watts is None else energy.tokens_per_joule(self.watts, self.output_tokens_per_s)

    @property
    def joules_per_output_token(self) -> float | None:
        return None if self.watts is None else energy.joules_per_token(self.watts, self.output_tokens_per_s)

    @property
    def usd_per_million_tokens(self) -> float | None:
        if self.usd_per_hour is None:
            return None
        return prices.usd_per_million_tokens(self.usd_per_hour, self.tokens_per_s)

    @property
    def usd_per_million_output_tokens(self) -> float | None:
        if self.usd_per_hour is None:
            return None
        return prices.usd_per_million_tokens(self.usd_per_hour, self.output_tokens_per_s)


def _price(spec: hardware.Spec, usd_per_hour) -> tuple[float | None, str]:
    if usd_per_hour is not None:
        return checks.number("usd_per_hour", usd_per_hour, strict=False), "given"
    price = assumptions.device_price(spec)
    return price.usd_per_hour, f"{price.offer} ({price.source}, {price.date})"


def estimate(
    model,
    *,
    device,
    prompt_len,
    output_len,
    batch=1,
    precision=None,
    weight_bytes_per_param=None,
    kv_bytes_per_value=None,
    efficiency=None,
    usd_per_hour=None,
    engine=None,
) -> ServingEstimate:
    """TTFT, TPOT, tokens/s and $ per 1M tokens of requests of ``prompt_len`` tokens in and
    ``output_len`` out, ``batch`` at a time on one ``device``, served in ``precision``.

    In the time one request lives in the batch (a *cycle*), ``batch`` requests leave and
    ``batch`` newcomers are prefilled: cycle = :func:`prefill_s` (``batch`` prompts) +
    ``output_len`` x :func:`decode_step_s` at the mean context, prompt_len + output_len / 2
    (a lower bound: the step time is convex in the context). ``efficiency`` divides every time
    (1.0: the bound). ``engine``: the profile that turns the bounds into an engine's times
    (:func:`engines.apply`; default the engine a practitioner runs on the device,
    :func:`engines.default_for`; "bound" for the bounds themselves). ``usd_per_hour``: default the
    price that stands for the device (``assumptions.device_price``). ValueError when the batch's KV
    caches do not fit (:func:`max_batch`)."""
    batch = checks.count("batch", batch)
    return Estimates(
        model,
        device=device,
        prompt_len=prompt_len,
        output_len=output_len,
        precision=precision,
        weight_bytes_per_param=weight_bytes_per_param,
        kv_bytes_per_value=kv_bytes_per_value,
        efficiency=efficiency,
        usd_per_hour=usd_per_hour,
        engine=engine,
    ).at(batch)


class Estimates:
    """:func:`estimate` of one model on one device for one request shape, precision, efficiency,
    price and engine, at any batch: what the batch does not change (the precision, the room for
    KV caches, one prompt's prefill, the engine, the price) worked out once, and each batch's
    estimate once. :func:`capacity`, :func:`at_load` and :func:`batch_latency` search through
    one; a caller asking several of them about the same server (the advisor) shares one.
    ``room``: the largest batch whose KV caches fit (:func:`max_batch`)."""

    def __init__(
        self,
        model,
        *,
        device,
        prompt_len,
        output_len,
        precision=None,
        weight_bytes_per_param=None,
        kv_bytes_per_value=None,
        efficiency=None,
        usd_per_hour=None,
        engine=None,
    ):
        self.config, self.spec = llms.as_config(model), _device(device)
        self.prompt_len = checks.count("prompt_len", prompt_len)
        self.output_len = checks.count("output_len", output_len)
        self.efficiency = basics.engine_efficiency(efficiency)
        self.served = resolve_precision(
            precision,
            device=self.spec,
            weight_bytes_per_param=weight_bytes_per_param,
            kv_bytes_per_value=kv_bytes_per_value,
            model=self.config,
        )
        self._shape = dict(
            device=self.spec, precision=self.served.name, weight_bytes_per_param=weight_bytes_per_param
        )
        self._kv = dict(kv_bytes_per_value=self.served.kv_bytes_per_value)
        self.room = max_batch(
            self.config, context_len=self.prompt_len + self.output_len, **self._shape, **self._kv
        )
        self._engine, self._usd_per_hour = engine, usd_per_hour
        self._at: dict[int, ServingEstimate] = {}
        self._latencies_s: dict[int, float] = {}  # latency_s of batches not in _at

    @functools.cached_property
    def _fixed(self) -> dict:
        """What every batch's estimate shares: one prompt's prefill, the engine, the price; then
        what serving_bounds' _decode_parts and prefill_s resolve from this server's precision
        and engines.apply takes from the engine's profile at every batch (the same arguments,
        in the same order), resolved once."""
        config, spec, served = self.config, self.spec, self.served
        usd_per_hour, source = _price(spec, self._usd_per_hour)
        fixed = dict(
            prefill_s=prefill_s(config, prompt_len=self.prompt_len, **self._shape) / self.efficiency,
            engine=self._engine
            if isinstance(self._engine, engines.Profile)
            else engines.get(self._engine, device=spec),
            usd_per_hour=usd_per_hour,
            price_source=source,
            watts=energy.device_watts(spec) if spec.tdp_watts else None,
            kv_layout=memory.kv_layout(config),
            routing=routing(config),
        )
        weight_bytes = self._shape["weight_bytes_per_param"]
        fixed["step_inputs"] = _step_inputs(
            config, spec, served.name, weight_bytes, served.kv_bytes_per_value, None
        )
        fixed["prefill_precision"] = resolve_precision(
            served.name, device=spec, weight_bytes_per_param=weight_bytes, model=config
        )
        fixed["engine_figures"] = engines.figures(
            fixed["engine"],
            device=spec,
            weight_bytes_per_param=served.weight_bytes_per_param,
            compute_dtype=served.compute_dtype,
        )
        return fixed

    def at(self, batch: int) -> ServingEstimate:
        """:func:`estimate` at ``batch``; ValueError when its KV caches do not fit."""
        if batch not in self._at:
            self._at[batch] = self._estimate(checks.count("batch", batch))
        return self._at[batch]

    def _cycle(self, batch: int) -> tuple[dict, engines.EngineTimes, float]:
        """At ``batch`` (checked): the decode step's work, the engine's times and a request's
        seconds in the batch; ValueError when its KV caches do not fit."""
        config, spec, served = self.config, self.spec, self.served
        prompt_len, output_len = self.prompt_len, self.output_len
        if batch > self.room:
            raise ValueError(
                f"batch={batch}: {spec.name} has room for the KV caches of {self.room} sequences of "
                f"{prompt_len + output_len} tokens beside {config.name}'s weights in {served.label} "
                f"(max_batch)"
            )
        fixed = self._fixed
        context = prompt_len + max(1, output_len // 2)
        step = _resolved_decode_parts(*fixed["step_inputs"], batch, context)
        times = fixed["engine_figures"].times(
            prefill_s=fixed["prefill_s"],
            batch_prefill_s=_resolved_prefill_s(config, spec, fixed["prefill_precision"], prompt_len, batch)
            / self.efficiency,
            decode_step_s=_step_s(step) / self.efficiency,
        )
        return step, times, times.batch_prefill_s + output_len * times.decode_step_s

    def _estimate(self, batch: int) -> ServingEstimate:
        config, spec, served = self.config, self.spec, self.served
        prompt_len, output_len = self.prompt_len, self.output_len
        step, times, cycle_s = self._cycle(batch)
        fixed = self._fixed
        return ServingEstimate(
            model=config.name,
            device=spec.name,
            batch=batch,
            prompt_len=prompt_len,
            output_len=output_len,
            ttft_s=times.ttft_s,
            tpot_s=cycle_s / output_len,
            latency_s=cycle_s,
            tokens_per_s=batch * (prompt_len + output_len) / cycle_s,
            output_tokens_per_s=batch * output_len / cycle_s,
            requests_per_s=batch / cycle_s,
            limit=_limit(step),
            usd_per_hour=fixed["usd_per_hour"],
            price_source=fixed["price_source"],
            engine=times.engine,
            watts=fixed["watts"],
            precision=served.label,
            compute_dtype=served.compute_dtype,
            engine_notes=times.notes,
            kv_layout=fixed["kv_layout"],
            routing=fixed["routing"],
        )

    def latency_s(self, batch: int) -> float:
        """Seconds a request takes in a batch of ``batch`` (what ``serverless.simulate`` takes):
        :meth:`at`'s ``latency_s``, the same arithmetic, without making the whole estimate where
        none is made yet (a simulation asks hundreds of batches; making one costs as much as
        its arithmetic)."""
        if batch in self._at:
            return self._at[batch].latency_s
        if batch not in self._latencies_s:
            self._latencies_s[batch] = self._cycle(checks.count("batch", batch))[2]
        return self._latencies_s[batch]

    def largest_batch(self, fits) -> int:
        """The largest batch in 1..``room`` whose estimate ``fits`` (latency and requests/s grow
        with the batch); 0 when none does."""
        return self._largest(lambda batch: fits(self.at(batch)))

    def _largest(self, fits) -> int:
        """:meth:`largest_batch` of ``fits``, a function of the batch."""
        low, high = 0, self.room
        while low < high:
            middle = (low + high + 1) // 2
            if fits(middle):
                low = middle
            else:
                high = middle - 1
        return low

    def capacity(self, latency_target_s) -> ServingEstimate | None:
        """:func:`capacity`: the estimate at the largest batch within ``latency_target_s`` (the
        batches tried on the way asked their latency alone, :meth:`latency_s`)."""
        latency_target_s = checks.number("latency_target_s", latency_target_s)
        best = self._largest(lambda batch: self.latency_s(batch) <= latency_target_s)
        return self.at(best) if best else None

    def at_load(self, requests_per_s) -> ServingEstimate | None:
        """:func:`at_load`: the estimate at the smallest batch that keeps up with ``requests_per_s``."""
        requests_per_s = checks.number("requests_per_s", requests_per_s)
        too_slow = self.largest_batch(lambda e: e.requests_per_s < requests_per_s)
        return self.at(too_slow + 1) if too_slow < self.room else None
