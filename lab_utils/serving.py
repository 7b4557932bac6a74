"""An LLM server as it runs: prefill, decode, batching and the KV cache, as roofline bounds.

A server first *prefills* a prompt (every prompt token at once: compute bound), then *decodes*
one token per sequence per step. Each decode step reads every weight once, shared by the whole
batch, plus each sequence's own KV cache, and computes 2 FLOPs per active parameter per
sequence, so its time is at least the larger of

- compute: 2 x active parameters x batch / peak FLOP/s (the dtype ``assumptions.compute_dtype``
  picks), and
- bytes: (weight bytes + batch x KV-cache bytes at the context) / memory bandwidth.

Batching shares the weight read, so tokens/s grow with the batch until the KV cache (or
compute) dominates: throughput saturates at min(peak / (2 x active params), bandwidth / KV
bytes per sequence) x 1 sequence-token, and the memory left beside the weights caps the batch
(:func:`max_batch`). Continuous batching (vLLM, TGI, SGLang) keeps that batch full: a finished
sequence's place goes to the next request, whose prefill runs between decode steps.

Precision: one ``precision=`` keyword ("checkpoint", "bf16"/"fp16", "fp8", "int8", "int4";
default the ``precision.inference`` assumption, "checkpoint": the weights as published, block
FP8, MXFP4 experts beside bf16 attention, int4, or bf16, from the model's quantization_config)
sets the weights' bytes, the KV cache's bytes and the dtype the device computes in together
(:func:`resolve_precision`): fp8 weights compute in FP8 where the device's catalog peak has
fp8, else in 16 bits; int8 and int4 are weight-only (16-bit compute).
``weight_bytes_per_param=`` and ``kv_bytes_per_value=`` override the bytes.

Layers as they are (``llms.Layer``): the KV cache as vLLM lays it out per layer kind (K and V per
KV head; a sliding-window layer at most its window; MLA's latent), and a mixture of experts'
decode step reads the experts its batch touches, E·(1 - (1 - k/E)^B) per MoE layer under
uniform routing (``basics.experts_touched``; ``routing_skew`` for a skewed router).

All figures are lower bounds on time (upper bounds on throughput) from vendor specifications;
``efficiency`` (0 < e <= 1) scales them to what an engine reaches. Pure Python: no torch.

>>> round(decode_step_s("Llama-3.1-8B", device="H100 SXM", context_len=4096) * 1e3, 1)  # ms
5.0
>>> max_batch("Llama-3.1-8B", device="H100 SXM", context_len=4096)
115
"""

from __future__ import annotations

import collections
import dataclasses
import functools
import math
from dataclasses import dataclass

from lab_utils import assumptions, basics, checks, energy, engines, hardware, llms, memory, prices

__all__ = [
    "PRECISIONS",
    "Precision",
    "Estimates",
    "ServingEstimate",
    "at_load",
    "batch_latency",
    "capacity",
    "decode_limit",
    "decode_step_s",
    "estimate",
    "kv_bytes_per_sequence",
    "max_batch",
    "prefill_s",
    "replica",
    "resolve_precision",
    "routing",
    "sizable",
    "StepBound",
    "step",
    "step_bound_s",
]

PRECISIONS = ("checkpoint", "bf16", "fp16", "fp8", "int8", "int4")
"""The precisions a model is served in: the checkpoint's own (its quantization_config), 16-bit,
FP8 (weights and compute where the device has it) and weight-only int8 / int4 (16-bit compute)."""


def _device(device) -> hardware.Spec:
    spec = hardware.as_spec(device)
    if not spec.bandwidth_bytes_per_s:
        raise ValueError(f"device={spec.name!r} has no memory bandwidth in the catalog: no serving bound")
    return spec


def replica(device, n_devices: int) -> hardware.Spec:
    """``n_devices`` of ``device`` serving one model together, as one device: memory, bandwidth
    and peaks add up (ideal tensor parallelism, an upper bound on its speed)."""
    spec = _device(device)
    n_devices = checks.count("n_devices", n_devices)
    if n_devices == 1:
        return spec
    return dataclasses.replace(
        spec,
        name=f"{n_devices} x {spec.name}",
        memory_bytes=n_devices * (spec.memory_bytes or 0),
        bandwidth_bytes_per_s=n_devices * spec.bandwidth_bytes_per_s,
        peak_flops={dtype: n_devices * peak for dtype, peak in spec.peak_flops.items()},
        tdp_watts=n_devices * spec.tdp_watts if spec.tdp_watts else spec.tdp_watts,
    )


@dataclass(frozen=True)
class Precision:
    """How a model is served on one device: ``name`` ("bf16", "fp8", "int4", ...), the weights'
    bytes per parameter, the KV cache's bytes per value, and the dtype the device computes in
    (a key of its catalog peaks); ``expert_bytes_per_param``: the routed experts' bytes where
    they differ (gpt-oss: MXFP4 experts, bf16 elsewhere), else None; ``checkpoint``: the
    published format served as it is (``llms.Checkpoint.format``), None for a chosen precision."""

    name: str
    weight_bytes_per_param: float
    kv_bytes_per_value: float
    compute_dtype: str
    expert_bytes_per_param: float | None = None
    checkpoint: str | None = None

    @property
    def label(self) -> str:
        """How the answer names it: "fp8" or "checkpoint (mxfp4)"."""
        return self.name if self.checkpoint is None else f"{self.name} ({self.checkpoint})"


def resolve_precision(
    precision=None, *, device, weight_bytes_per_param=None, kv_bytes_per_value=None, model=None
) -> Precision:
    """The :class:`Precision` of serving in ``precision`` (default: the ``precision.inference``
    assumption) on ``device``. Weights: ``basics.BYTES_PER_VALUE``, or for "checkpoint" the
    bytes of ``model``'s published checkpoint (``llms.Checkpoint``; bf16 when it has none), FP8
    compute for an FP8 checkpoint where the device has it; KV cache: the
    ``kv_bytes_per_value`` assumption (16 bits: engines keep the cache in the activations'
    dtype unless told otherwise); compute: FP8 for "fp8" where the device has an fp8 peak,
    else the dtype the device computes in (``assumptions.compute_dtype``): int8 and int4 are
    weight-only. ``weight_bytes_per_param`` / ``kv_bytes_per_value`` override the bytes."""
    spec = _device(device)
    name = assumptions.precision_for("inference") if precision is None else precision
    checks.choice("precision", name, PRECISIONS)
    expert, published, fp8 = None, None, name == "fp8"
    if name == "checkpoint":
        if model is None:
            raise ValueError("precision='checkpoint' needs model= (its published checkpoint)")
        checkpoint = llms.as_config(model).checkpoint
        published = "bf16" if checkpoint is None else checkpoint.format
        weight = basics.bytes_per_value("bf16") if checkpoint is None else checkpoint.other_bytes_per_param
        if checkpoint is not None and checkpoint.expert_bytes_per_param != checkpoint.other_bytes_per_param:
            expert = checkpoint.expert_bytes_per_param
        fp8 = published.startswith("fp8")
    else:
        weight = basics.bytes_per_value(name)
    if weight_bytes_per_param is not None:  # every weight in the bytes given
        weight, expert = weight_bytes_per_param, None
    kv = assumptions.resolve(kv_bytes_per_value=kv_bytes_per_value)[0]["kv_bytes_per_value"]
    compute = "fp8" if fp8 and "fp8" in spec.peak_flops else assumptions.compute_dtype(spec)
    return Precision(
        name,
        checks.number("weight_bytes_per_param", weight),
        checks.number("kv_bytes_per_value", kv),
        compute,
        None if expert is None else checks.number("expert_bytes_per_param", expert),
        published,
    )


def _all_weight_bytes(config: llms.LLMConfig, served: Precision) -> float:
    """Bytes of every weight of ``config`` served in ``served`` (the routed experts in theirs)."""
    return basics.held_weight_bytes(
        config,
        weight_bytes_per_param=served.weight_bytes_per_param,
        expert_bytes_per_param=served.expert_bytes_per_param,
    )


def sizable(model) -> str | None:
    """None when the catalog has what serving needs to size ``model``'s KV cache; else why not."""
    config = llms.as_config(model)
    if not config.layers:
        return (
            f"cannot estimate: {config.name}'s layers are not in lab_utils/data/llm_configs.toml, "
            f"so its KV cache cannot be sized"
        )
    return None


def kv_bytes_per_sequence(model, *, context_len, kv_bytes_per_value=None) -> float:
    """Bytes of one sequence's KV cache at ``context_len`` tokens, as vLLM lays it out per layer
    (``basics.kv_values_per_sequence``: full, sliding-window and MLA layers each their own);
    ValueError naming the gap when the catalog lacks the layers."""
    config = llms.as_config(model)
    why = sizable(config)
    if why:
        raise ValueError(f"model={config.name!r}: {why}")
    kv = assumptions.resolve(kv_bytes_per_value=kv_bytes_per_value)[0]["kv_bytes_per_value"]
    values = basics.kv_values_per_sequence(config.layers, checks.count("context_len", context_len))
    return float(checks.number("kv_bytes_per_value", kv) * values)


step_bound_s = basics.step_bound_s
"""The roofline of one step (its owner: ``basics.step_bound_s``)."""


def _decode_parts(
    model,
    device,
    batch,
    context_len,
    precision,
    weight_bytes_per_param,
    kv_bytes_per_value,
    routing_skew=None,
):
    """One decode step's work: dict(flops, weight_bytes, kv_bytes, peak_flops, bandwidth_bytes_per_s)
    (``basics.decode_work``: the experts the batch touches, the KV cache per layer kind)."""
    config, spec = llms.as_config(model), _device(device)
    why = sizable(config)
    if why:
        raise ValueError(f"model={config.name!r}: {why}")
    served = resolve_precision(
        precision,
        device=spec,
        weight_bytes_per_param=weight_bytes_per_param,
        kv_bytes_per_value=kv_bytes_per_value,
        model=config,
    )
    skew = assumptions.resolve(routing_skew=routing_skew)[0]["routing_skew"]
    work = basics.decode_work(
        config,
        batch=batch,
        context_len=context_len,
        weight_bytes_per_param=served.weight_bytes_per_param,
        expert_bytes_per_param=served.expert_bytes_per_param,
        kv_bytes_per_value=served.kv_bytes_per_value,
        skew=checks.number("routing_skew", skew, strict=False),
    )
    return dict(
        flops=work.flops,
        weight_bytes=work.weight_bytes,
        kv_bytes=work.kv_bytes,
        peak_flops=spec.peak_flops[served.compute_dtype],
        bandwidth_bytes_per_s=spec.bandwidth_bytes_per_s,
    )


@dataclass(frozen=True)
class StepBound:
    """One engine step at least: ``compute_s`` (its FLOPs over the peak) and ``memory_s`` (its
    bytes over the bandwidth); ``seconds`` is the larger (the roofline), ``compute_dtype`` the
    dtype the peak is for (an engine profile scales each part by its own efficiency)."""

    compute_s: float
    memory_s: float
    compute_dtype: str

    @property
    def seconds(self) -> float:
        return max(self.compute_s, self.memory_s)


def step(
    model,
    *,
    device,
    decode_contexts=(),
    prefill_chunks=(),
    precision=None,
    weight_bytes_per_param=None,
    kv_bytes_per_value=None,
    routing_skew=None,
) -> StepBound:
    """One step of a continuous-batching engine at least: a sequence per entry of
    ``decode_contexts`` (its tokens in the KV cache; or a mapping {context: sequences}) makes
    one token, and each prefill chunk ``(tokens, cached)`` runs ``tokens`` prompt tokens after
    ``cached`` already in the cache. All share one read of the weights (a mixture of experts:
    those the step's tokens touch, ``basics.weight_bytes_read``). FLOPs: 2 per active parameter
    per token, each decode's attention over its context (``basics.decode_attention_flops``) and
    each chunk's causal attention (``basics.chunk_attention_flops``). Bytes: the weights, each
    decode's KV cache and each chunk's cached prefix (``basics.kv_values_per_sequence``).
    :func:`decode_step_s` and :func:`prefill_s` are its two pure cases (tests/test_replica.py)."""
    config, spec = llms.as_config(model), _device(device)
    why = sizable(config)
    if why:
        raise ValueError(f"model={config.name!r}: {why}")
    served = resolve_precision(
        precision,
        device=spec,
        weight_bytes_per_param=weight_bytes_per_param,
        kv_bytes_per_value=kv_bytes_per_value,
        model=config,
    )
    skew = assumptions.resolve(routing_skew=routing_skew)[0]["routing_skew"]
    contexts = collections.Counter(decode_contexts)  # a mapping {context: sequences} counts as given
    for context, n in contexts.items():
        checks.count("context_len", context), checks.count("sequences at a context", n, minimum=0)
    chunks = [
        (checks.count("prompt_len", t), checks.count("cached", c, minimum=0)) for t, c in prefill_chunks
    ]
    tokens = sum(contexts.values()) + sum(t for t, _ in chunks)
    if not tokens:
        raise ValueError("step: give decode_contexts or prefill_chunks (a step of no tokens takes no time)")
    layers = config.layers
    flops = (
        basics.FLOPS_PER_PARAM_PER_TOKEN["inference"] * config.params_per_token * tokens
        + sum(n * basics.decode_attention_flops(layers, c) for c, n in contexts.items() if n)
        + sum(basics.chunk_attention_flops(layers, t, cached) for t, cached in chunks)
    )
    kv_read = [(n, c) for c, n in contexts.items() if n] + [(1, cached) for _, cached in chunks if cached]
    kv_values = sum(n * basics.kv_values_per_sequence(layers, c) for n, c in kv_read)
    weight_bytes, _ = basics.weight_bytes_read(
        config,
        tokens,
        weight_bytes_per_param=served.weight_bytes_per_param,
        expert_bytes_per_param=served.expert_bytes_per_param,
        skew=checks.number("routing_skew", skew, strict=False),
    )
    bytes_read = weight_bytes + kv_values * served.kv_bytes_per_value
    return StepBound(
        compute_s=flops / spec.peak_flops[served.compute_dtype],
        memory_s=bytes_read / checks.number("bandwidth_bytes_per_s", spec.bandwidth_bytes_per_s),
        compute_dtype=served.compute_dtype,
    )


def decode_step_s(
    model,
    *,
    device,
    batch=1,
    context_len,
    precision=None,
    weight_bytes_per_param=None,
    kv_bytes_per_value=None,
    routing_skew=None,
) -> float:
    """Seconds of one decode step at least: ``batch`` sequences, each with ``context_len`` tokens
    in its KV cache, make one token each. max(FLOPs / peak, (weight bytes read + batch x KV
    bytes) / bandwidth): 2 FLOPs per active parameter and the attention over the context per
    sequence; the weights but the routed experts, and per MoE layer the experts the batch
    touches (uniform routing unless ``routing_skew``, the assumption of that name).
    Llama-3.1-8B, bf16, one H100 SXM, 4,096 tokens: 4.94 ms."""
    return _step_s(
        _decode_parts(
            model,
            device,
            batch,
            context_len,
            precision,
            weight_bytes_per_param,
            kv_bytes_per_value,
            routing_skew,
        )
    )


def _step_s(step: dict) -> float:
    """The roofline of one step's work (a :func:`_decode_parts` dict)."""
    return step_bound_s(
        flops=step["flops"],
        bytes_read=step["weight_bytes"] + step["kv_bytes"],
        peak_flops=step["peak_flops"],
        bandwidth_bytes_per_s=step["bandwidth_bytes_per_s"],
    )


def decode_limit(
    model,
    *,
    device,
    batch=1,
    context_len,
    precision=None,
    weight_bytes_per_param=None,
    kv_bytes_per_value=None,
) -> str:
    """What bounds that decode step: "compute", "weights" (reading them dominates the bytes) or
    "kv cache" (the batch's caches outweigh the weights)."""
    return _limit(
        _decode_parts(
            model, device, batch, context_len, precision, weight_bytes_per_param, kv_bytes_per_value
        )
    )


def _limit(step: dict) -> str:
    """What bounds one step's work (a :func:`_decode_parts` dict): see :func:`decode_limit`."""
    if (
        step["flops"] / step["peak_flops"]
        >= (step["weight_bytes"] + step["kv_bytes"]) / step["bandwidth_bytes_per_s"]
    ):
        return "compute"
    return "weights" if step["weight_bytes"] >= step["kv_bytes"] else "kv cache"


def prefill_s(model, *, device, prompt_len, batch=1, precision=None, weight_bytes_per_param=None) -> float:
    """Seconds to prefill ``batch`` prompts of ``prompt_len`` tokens at least: compute bound,
    2 x active params per token plus causal attention (``basics.attention_flops_per_token``, per
    layer: a sliding window keeps its keys to the window), over the peak; never less than one
    read of the weights the prompts' tokens touch over the bandwidth."""
    config, spec = llms.as_config(model), _device(device)
    prompt_len = checks.count("prompt_len", prompt_len)
    batch = checks.count("batch", batch)
    served = resolve_precision(
        precision, device=spec, weight_bytes_per_param=weight_bytes_per_param, model=config
    )
    attention = basics.attention_flops_per_token(config.layers, prompt_len)
    flops = batch * prompt_len * (2 * config.params_per_token + attention)
    weight_bytes, _ = basics.weight_bytes_read(
        config,
        batch * prompt_len,
        weight_bytes_per_param=served.weight_bytes_per_param,
        expert_bytes_per_param=served.expert_bytes_per_param,
    )
    return step_bound_s(
        flops=flops,
        bytes_read=weight_bytes,
        peak_flops=spec.peak_flops[served.compute_dtype],
        bandwidth_bytes_per_s=spec.bandwidth_bytes_per_s,
    )


def max_batch(
    model, *, device, context_len, precision=None, weight_bytes_per_param=None, kv_bytes_per_value=None
) -> int:
    """How many sequences of ``context_len`` tokens have room for their KV caches beside the
    weights: (memory - weights - CUDA context reserve) // KV bytes per sequence; 0 when the
    weights do not fit. The reserve is the ``cuda_context_bytes`` assumption."""
    config, spec = llms.as_config(model), _device(device)
    served = resolve_precision(
        precision,
        device=spec,
        weight_bytes_per_param=weight_bytes_per_param,
        kv_bytes_per_value=kv_bytes_per_value,
        model=config,
    )
    if not spec.memory_bytes:
        raise ValueError(f"device={spec.name!r} has no memory size in the catalog")
    free = spec.memory_bytes - assumptions.value("cuda_context_bytes") - _all_weight_bytes(config, served)
    kv = kv_bytes_per_sequence(config, context_len=context_len, kv_bytes_per_value=served.kv_bytes_per_value)
    return max(0, math.floor(free / kv))


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

    @functools.cached_property
    def _fixed(self) -> dict:
        """What every batch's estimate shares: one prompt's prefill, the engine, the price."""
        config, spec = self.config, self.spec
        usd_per_hour, source = _price(spec, self._usd_per_hour)
        return dict(
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

    def at(self, batch: int) -> ServingEstimate:
        """:func:`estimate` at ``batch``; ValueError when its KV caches do not fit."""
        if batch not in self._at:
            self._at[batch] = self._estimate(checks.count("batch", batch))
        return self._at[batch]

    def _estimate(self, batch: int) -> ServingEstimate:
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
        step = _decode_parts(
            config,
            spec,
            batch,
            context,
            served.name,
            self._shape["weight_bytes_per_param"],
            served.kv_bytes_per_value,
        )
        times = engines.apply(
            fixed["engine"],
            device=spec,
            weight_bytes_per_param=served.weight_bytes_per_param,
            prefill_s=fixed["prefill_s"],
            batch_prefill_s=prefill_s(config, prompt_len=prompt_len, batch=batch, **self._shape)
            / self.efficiency,
            decode_step_s=_step_s(step) / self.efficiency,
        )
        cycle_s = times.batch_prefill_s + output_len * times.decode_step_s
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
        """Seconds a request takes in a batch of ``batch`` (what ``serverless.simulate`` takes)."""
        return self.at(batch).latency_s

    def largest_batch(self, fits) -> int:
        """The largest batch in 1..``room`` whose estimate ``fits`` (latency and requests/s grow
        with the batch); 0 when none does."""
        low, high = 0, self.room
        while low < high:
            middle = (low + high + 1) // 2
            if fits(self.at(middle)):
                low = middle
            else:
                high = middle - 1
        return low

    def capacity(self, latency_target_s) -> ServingEstimate | None:
        """:func:`capacity`: the estimate at the largest batch within ``latency_target_s``."""
        latency_target_s = checks.number("latency_target_s", latency_target_s)
        best = self.largest_batch(lambda e: e.latency_s <= latency_target_s)
        return self.at(best) if best else None

    def at_load(self, requests_per_s) -> ServingEstimate | None:
        """:func:`at_load`: the estimate at the smallest batch that keeps up with ``requests_per_s``."""
        requests_per_s = checks.number("requests_per_s", requests_per_s)
        too_slow = self.largest_batch(lambda e: e.requests_per_s < requests_per_s)
        return self.at(too_slow + 1) if too_slow < self.room else None


def routing(model, routing_skew=None) -> str:
    """The routing a mixture of experts' decode step assumes, as its answer names it (empty for a
    dense model): uniform, E·(1 - (1 - k/E)^B) experts per MoE layer for a batch of B, or a
    skewed router (``basics.experts_touched``)."""
    config = llms.as_config(model)
    if not config.is_moe:
        return ""
    skew = assumptions.resolve(routing_skew=routing_skew)[0]["routing_skew"]
    if skew == 0:
        return "uniform: a batch of B touches E(1 - (1 - k/E)^B) of a layer's E experts (k per token)"
    return f"skewed (Zipf exponent {skew:g}): a batch touches fewer experts than under uniform routing"


def capacity(
    model,
    *,
    device,
    prompt_len,
    output_len,
    latency_target_s,
    precision=None,
    weight_bytes_per_param=None,
    kv_bytes_per_value=None,
    efficiency=None,
    usd_per_hour=None,
    engine=None,
) -> ServingEstimate | None:
    """The batch that serves the most requests/s while each request finishes within
    ``latency_target_s`` (:func:`estimate` at the largest such batch, up to :func:`max_batch`);
    None when even one request alone takes longer, or the weights do not fit."""
    latency_target_s = checks.number("latency_target_s", latency_target_s)
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
    ).capacity(latency_target_s)


def batch_latency(
    model,
    *,
    device,
    prompt_len,
    output_len,
    precision=None,
    weight_bytes_per_param=None,
    kv_bytes_per_value=None,
    efficiency=None,
    engine=None,
):
    """A function of n: the seconds a request takes in a batch of n (:func:`estimate`'s
    ``latency_s``), each n computed once; what ``serverless.simulate`` takes as ``service_s``."""

    return Estimates(
        model,
        device=device,
        prompt_len=prompt_len,
        output_len=output_len,
        precision=precision,
        weight_bytes_per_param=weight_bytes_per_param,
        kv_bytes_per_value=kv_bytes_per_value,
        efficiency=efficiency,
        usd_per_hour=0.0,
        engine=engine,
    ).latency_s


def at_load(
    model,
    *,
    device,
    prompt_len,
    output_len,
    requests_per_s,
    precision=None,
    weight_bytes_per_param=None,
    kv_bytes_per_value=None,
    efficiency=None,
    usd_per_hour=None,
    engine=None,
) -> ServingEstimate | None:
    """The server at a steady load of ``requests_per_s``: :func:`estimate` at the smallest batch
    whose requests/s keep up (a request waits for no more than that batch); None when no batch
    that fits (:func:`max_batch`) keeps up: the queue grows without end."""
    requests_per_s = checks.number("requests_per_s", requests_per_s)
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
    ).at_load(requests_per_s)
