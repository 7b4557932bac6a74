"""The bounds of one server step: the precision a model is served in (:func:`resolve_precision`),
the KV cache per sequence, a decode step's and a prefill's roofline time (:func:`decode_step_s`,
:func:`prefill_s`, :func:`step`), the largest batch beside the weights (:func:`max_batch`) and the
routing a mixture of experts' step assumes. Part of ``lab_utils.serving``, which names all of it."""

from __future__ import annotations

import collections
import dataclasses
import functools
import math
from dataclasses import dataclass

from lab_utils import assumptions, basics, checks, hardware, llms

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
    def keywords(self) -> dict:
        """The ``precision``, ``weight_bytes_per_param`` and ``kv_bytes_per_value`` that
        :func:`resolve_precision` turns back into this one (with the model): the weights' bytes
        are left to the precision where the routed experts have bytes of their own."""
        weight = None if self.expert_bytes_per_param is not None else self.weight_bytes_per_param
        return dict(
            precision=self.name, weight_bytes_per_param=weight, kv_bytes_per_value=self.kv_bytes_per_value
        )

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


def _step_inputs(model, device, precision, weight_bytes_per_param, kv_bytes_per_value, routing_skew):
    """(config, spec, served precision, routing skew) of a step of ``model`` on ``device``, each
    None resolved to its assumption; the ValueError of :func:`sizable` when the layers are missing."""
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
    return config, spec, served, skew


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
    step_inputs = _step_inputs(
        model, device, precision, weight_bytes_per_param, kv_bytes_per_value, routing_skew
    )
    return _resolved_decode_parts(*step_inputs, batch, context_len)


def _resolved_decode_parts(config, spec, served, skew, batch, context_len) -> dict:
    """:func:`_decode_parts` of what :func:`_step_inputs` resolved, for a caller asking many
    batches of one server (``serving.Estimates``): the same arithmetic, resolved once."""
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
    pricer = step_pricer(
        model,
        device=device,
        precision=precision,
        weight_bytes_per_param=weight_bytes_per_param,
        kv_bytes_per_value=kv_bytes_per_value,
        routing_skew=routing_skew,
    )
    return pricer(decode_contexts, prefill_chunks)


def step_pricer(
    model, *, device, precision=None, weight_bytes_per_param=None, kv_bytes_per_value=None, routing_skew=None
):
    """:func:`step` of ``model`` on ``device`` in one precision, what it resolves (the model, the
    device, the served precision, the routing skew) resolved once: a function
    (decode_contexts, prefill_chunks) -> :class:`StepBound`, for a caller that prices many steps
    (``lab_utils.replica``'s step loop)."""
    config, spec, served, skew = _step_inputs(
        model, device, precision, weight_bytes_per_param, kv_bytes_per_value, routing_skew
    )

    return functools.partial(_bound, config, spec, served, skew)


def _bound(config, spec, served, routing_skew, decode_contexts=(), prefill_chunks=()) -> StepBound:
    """:func:`step` of the resolved ``config`` on ``spec`` in ``served``."""
    contexts = collections.Counter(decode_contexts)  # a mapping {context: sequences} counts as given
    for context, n in contexts.items():
        checks.count("context_len", context), checks.count("sequences at a context", n, minimum=0)
    chunks = [
        (checks.count("prompt_len", t), checks.count("cached", c, minimum=0)) for t, c in prefill_chunks
    ]
    tokens = sum(contexts.values()) + sum(t for t, _ in chunks)
    if not tokens:
        raise ValueError("step: give decode_contexts or prefill_chunks (a step of no tokens takes no time)")
    layers, skew = config.layers, checks.number("routing_skew", routing_skew, strict=False)
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
        skew=skew,
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
    return _resolved_prefill_s(config, spec, served, prompt_len, batch)


def _resolved_prefill_s(config, spec, served, prompt_len: int, batch: int) -> float:
    """:func:`prefill_s` of the checked ``prompt_len`` and ``batch`` in the resolved ``served``,
    for a caller asking many batches of one server (``serving.Estimates``)."""
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
