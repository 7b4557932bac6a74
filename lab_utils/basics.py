"""The calculators' shared kernels, at the bottom of the calculator layer.

Each formula that more than one calculator needs has its one owner here; ``memory``,
``serving``, ``economics``, ``advisor`` and the rest import it and never write it again:

- :func:`peak_flops`: a device's dense peak in the dtype it computes in (or one given);
- :data:`FLOPS_PER_PARAM_PER_TOKEN`: 6, 4 or 2 FLOPs per parameter per token (``economics``
  counts jobs with it, the decode step here too);
- :data:`BYTES_PER_VALUE`, :func:`bytes_per_value`, :func:`weight_bytes`: bytes of values stored
  in a precision;
- :func:`whole_servers`: a job beyond one server rents whole servers;
- :func:`always_on_devices` and :func:`always_on_per_month_usd`: how many devices an always-on
  service keeps, and their monthly bill;
- :func:`per_month_usd`: a one-off cost (a fine-tune) spread over months of serving;
- :func:`engine_efficiency`: the extra factor on an engine's times (None: 1).

Pure arithmetic: no torch, no clock, no screen. It imports only the data layer.

>>> peak_flops(hardware.get("T4"))
('fp16', 65000000000000.0)
>>> whole_servers(12, 8)
(2, 16)
>>> whole_servers(3, 8, shapes=(1, 2, 4, 8))
(1, 4)
>>> weight_bytes(8e9, "bf16") / 1e9
16.0
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

from lab_utils import assumptions, checks, hardware

__all__ = [
    "BYTES_PER_VALUE",
    "FLOPS_PER_PARAM_PER_TOKEN",
    "HOURS_PER_MONTH",
    "always_on_devices",
    "always_on_per_month_usd",
    "attention_flops_per_token",
    "bytes_per_value",
    "decode_attention_flops",
    "decode_work",
    "DecodeWork",
    "engine_efficiency",
    "experts_touched",
    "kv_values_per_sequence",
    "peak_flops",
    "per_month_usd",
    "step_bound_s",
    "weight_bytes",
    "weight_bytes_read",
    "whole_servers",
]

HOURS_PER_MONTH = 730.0
"""Hours in an average month: 365 x 24 / 12, the month cloud providers bill."""

FLOPS_PER_PARAM_PER_TOKEN = {"full": 6, "lora": 4, "qlora": 4, "inference": 2}
"""FLOPs per parameter per token: training forward 2 + backward 4 (2 for the input gradients,
2 for the weight gradients, which LoRA and QLoRA skip for the frozen weights); inference 2.
QLoRA also dequantizes its 4-bit weights on the fly: more time at the same FLOP count."""

BYTES_PER_VALUE = {"fp32": 4, "bf16": 2, "fp16": 2, "fp8": 1, "int8": 1, "int4": 0.5}
"""Bytes per stored value. 4-bit formats (NF4, GPTQ, AWQ) also store a scale per block of
weights, a few percent more (QLoRA, arXiv 2305.14314: NF4 ~0.5 byte per parameter)."""


def bytes_per_value(precision: str) -> float:
    """Bytes one value takes in ``precision`` (a key of :data:`BYTES_PER_VALUE`)."""
    return BYTES_PER_VALUE[checks.choice("precision", precision, BYTES_PER_VALUE)]


def weight_bytes(n_params, precision: str = "bf16") -> float:
    """Bytes to hold ``n_params`` weights (or any values) in ``precision``."""
    n_params = checks.number("n_params", n_params)
    return float(n_params * bytes_per_value(precision))


def peak_flops(spec: hardware.Spec, dtype: str | None = None) -> tuple[str, float]:
    """(dtype, dense peak FLOP/s) of ``spec`` (vendor specification): in ``dtype`` when given,
    else in the dtype it computes in (the ``compute_dtypes`` assumption: bf16, else fp16, else
    fp32). ValueError, naming the peaks it has, when the catalog has no such peak."""
    spec = hardware.as_spec(spec)
    if dtype is None:
        dtype = assumptions.compute_dtype(spec)
    if dtype not in spec.peak_flops:
        raise ValueError(f"dtype={dtype!r}: {spec.name} has peaks for {tuple(spec.peak_flops)}")
    return dtype, spec.peak_flops[dtype]


def whole_servers(n_devices, per_server, shapes=None) -> tuple[int, int]:
    """(servers, devices rented) for a job that needs ``n_devices``: within one server of
    ``per_server`` devices, the smallest server shape of ``shapes`` (GPU counts a server is
    rented with, ``assumptions.server_shapes``; None: any count) that holds them, so 3 GPUs of
    shapes (1, 2, 4, 8) rent a 4-GPU server; beyond it, whole servers of ``per_server`` (a
    cluster rents nodes, not single GPUs), so 12 GPUs of 8 per server rent 2 servers, 16 GPUs."""
    n_devices = checks.count("n_devices", n_devices)
    per_server = checks.count("max_devices", per_server)
    servers = math.ceil(n_devices / per_server)
    if servers > 1:
        return servers, servers * per_server
    if shapes is None:
        return 1, n_devices
    return 1, min(checks.count("shapes", shape) for shape in (*shapes, per_server) if shape >= n_devices)


def always_on_devices(load, capacity_per_device, utilisation=None) -> int:
    """Devices (or replicas) an always-on service keeps for an average ``load``, each serving
    at most ``capacity_per_device`` in the same unit (requests/s, tokens per month, ...).

    The one rule: enough that the average load uses at most ``utilisation`` of their capacity
    (None: the ``serve_utilisation`` assumption, one half), since random arrivals come in bursts
    and a server run at full capacity queues them; and at least one, since an always-on
    service keeps a device even when no request comes."""
    load = checks.number("load", load, strict=False)
    capacity = checks.number("capacity_per_device", capacity_per_device)
    share = assumptions.resolve(serve_utilisation=utilisation)[0]["serve_utilisation"]
    share = checks.number("utilisation", share, maximum=1.0)
    return max(1, math.ceil(load / (capacity * share)))


def always_on_per_month_usd(n_devices, usd_per_hour) -> float:
    """Dollars a month for ``n_devices`` billed every hour of it (:data:`HOURS_PER_MONTH`), busy or
    idle, at ``usd_per_hour`` each."""
    n_devices = checks.count("n_devices", n_devices)
    usd_per_hour = checks.number("usd_per_hour", usd_per_hour, strict=False)
    return n_devices * HOURS_PER_MONTH * usd_per_hour


def per_month_usd(cost_usd, months=None) -> float:
    """A one-off ``cost_usd`` (a fine-tune) spread evenly over ``months`` of serving (None: the
    ``amortize_months`` assumption), as a self-hosted monthly bill counts it."""
    cost_usd = checks.number("cost_usd", cost_usd, strict=False)
    months = assumptions.resolve(amortize_months=months)[0]["amortize_months"]
    return cost_usd / checks.number("amortize_months", months)


def engine_efficiency(efficiency=None) -> float:
    """The extra factor (0 < e <= 1) on a serving engine's times; None: 1, the engine's profile
    alone (its published measurement is the estimate, so no assumption is added)."""
    return 1.0 if efficiency is None else checks.number("efficiency", efficiency, maximum=1.0)


# --- per layer: experts a batch touches, the KV cache, attention FLOPs, the decode step ---------
# (branch moe: each formula here is the one the memory, serving and economics calculators use)


def _routing_probabilities(n_experts: int, top_k: int, skew: float) -> list[float]:
    """The chance that one token picks each routed expert: k/E each under uniform routing
    (``skew`` 0); with ``skew`` s > 0, in proportion to Zipf weights 1/rank^s, capped at 1
    (an expert a token picks at most once), the excess spread over the others, the total k."""
    weights = [(rank + 1) ** -skew for rank in range(n_experts)]
    chances, free, budget = [0.0] * n_experts, set(range(n_experts)), float(top_k)
    while free:
        scale = budget / sum(weights[i] for i in free)
        capped = {i for i in free if weights[i] * scale >= 1.0}
        if not capped:
            for i in free:
                chances[i] = weights[i] * scale
            break
        for i in capped:
            chances[i] = 1.0
        free -= capped
        budget -= len(capped)
    return chances


def experts_touched(n_experts, top_k, tokens, *, skew=0.0) -> float:
    """Routed experts one MoE layer reads, in expectation, for ``tokens`` tokens routed at once
    (a decode step: one token per sequence of the batch), each token picking ``top_k`` of
    ``n_experts`` independently. Uniform routing (``skew`` 0): E·(1 - (1 - k/E)^B); Mixtral
    (8 experts, top 2) at batch 4 touches 8·(1 - 0.75⁴) = 5.47 of its 8. ``skew`` s > 0: a
    Zipf-like router whose r-th most popular expert gets traffic in proportion to 1/r^s, so a
    batch touches fewer experts: Σᵢ 1 - (1 - pᵢ)^B."""
    n_experts = checks.count("n_experts", n_experts)
    top_k = checks.count("top_k", top_k)
    if top_k > n_experts:
        raise ValueError(f"top_k={top_k}: must not exceed n_experts={n_experts}")
    tokens = checks.number("tokens", tokens, strict=False, allow_inf=True)
    skew = checks.number("skew", skew, strict=False)
    if skew == 0:
        return n_experts * (1.0 - (1.0 - top_k / n_experts) ** tokens)
    return sum(1.0 - (1.0 - p) ** tokens for p in _routing_probabilities(n_experts, top_k, skew))


def kv_values_per_sequence(layers, context_len) -> int:
    """Values one sequence of ``context_len`` tokens keeps in the KV cache, summed over
    ``layers`` (``llms.Layer``) as vLLM lays it out: per layer, the values per token of its
    attention kind (K and V per KV head; MLA's latent, kv_lora_rank + qk_rope_head_dim) times
    the tokens it keeps (a sliding-window layer at most its window)."""
    return _kv_values_per_sequence(layers, checks.count("context_len", context_len))


_KEPT: dict = {}  # (function, id(layers), arguments) -> (layers, the sum): see _kept_per_layers
_KEPT_MOST = 4096  # entries before the store starts again


def _kept_per_layers(function):
    """``function(layers, *arguments)``, a sum over a tuple of layers, computed once per tuple and
    arguments and kept (the serving estimates ask the same sums for every batch): a tuple of
    frozen layers cannot change, and its entry holds it, so its id stays its own. Layers given
    in a list or a generator are summed each time."""

    @functools.wraps(function)
    def kept(layers, *arguments):
        if type(layers) is not tuple:
            return function(layers, *arguments)
        key = (function, id(layers), arguments)
        entry = _KEPT.get(key)
        if entry is None:
            if len(_KEPT) >= _KEPT_MOST:
                _KEPT.clear()
            entry = _KEPT[key] = (layers, function(layers, *arguments))
        return entry[1]

    return kept


@_kept_per_layers
def _kv_values_per_sequence(layers, context_len: int) -> int:
    return sum(
        layer.attention.kv_values_per_token * layer.attention.cached_tokens(context_len) for layer in layers
    )


def _causal_keys(window, start, end) -> float:
    """Keys summed over the queries at positions start..end of a causal sequence (each sees the
    tokens before it, at most ``window``): the integral of min(window, p) from start to end."""

    def below(x):
        return x * x / 2 if x <= window else window * x - window * window / 2

    return below(end) - below(start)


def chunk_attention_flops(layers, tokens, cached=0) -> float:
    """Forward attention FLOPs of a prompt chunk of ``tokens`` tokens that follows ``cached``
    tokens already in the KV cache (chunked prefill; ``cached`` 0: a whole prompt), causal,
    summed over ``layers``: per query, 2·heads·(head_dim + v_head_dim) per key it sees (Q·Kᵀ
    and ·V), a sliding-window layer at most its window."""
    return _chunk_attention_flops(
        layers, checks.count("tokens", tokens), checks.count("cached", cached, minimum=0)
    )


@_kept_per_layers
def _chunk_attention_flops(layers, tokens: int, cached: int) -> float:
    total = 0.0
    for layer in layers:
        attention = layer.attention
        window = attention.window if attention.kind == "sliding" and attention.window else math.inf
        keys = _causal_keys(window, cached, cached + tokens)
        total += 2.0 * attention.n_heads * (attention.head_dim + attention.v_head_dim) * keys
    return total


def attention_flops_per_token(layers, seq_len, *, causal: bool = True) -> float:
    """Forward FLOPs per token of the attention scores (Q·Kᵀ, 2·heads·head_dim per key) and
    their weighted sum (·V, 2·heads·v_head_dim per key), summed over ``layers``, for sequences
    of ``seq_len`` tokens. Keys a query sees: ``seq_len`` (``causal`` False), seq_len / 2 on
    average causal; a sliding window w below seq_len: w (non-causal) or w - w²/(2·seq_len)
    (causal, :func:`chunk_attention_flops` of the whole sequence). MLA as written by
    transformers (q·k over qk_nope + qk_rope per head, v of v_head_dim). Llama-3.1-8B at 8,192
    tokens, causal: 32 x 4 x 4,096 x 4,096 = 2.1e9."""
    seq_len = checks.count("seq_len", seq_len)
    if causal:
        return chunk_attention_flops(layers, seq_len) / seq_len
    total = 0.0
    for layer in layers:
        attention = layer.attention
        window = attention.window if attention.kind == "sliding" and attention.window else seq_len
        total += 2.0 * attention.n_heads * (attention.head_dim + attention.v_head_dim) * min(seq_len, window)
    return total


def decode_attention_flops(layers, context_len) -> float:
    """Attention FLOPs of one decode step of one sequence: its new token's query against the
    ``context_len`` keys each layer keeps (:func:`kv_values_per_sequence`'s tokens)."""
    return _decode_attention_flops(layers, checks.count("context_len", context_len))


@_kept_per_layers
def _decode_attention_flops(layers, context_len: int) -> float:
    return sum(
        2.0
        * layer.attention.n_heads
        * (layer.attention.head_dim + layer.attention.v_head_dim)
        * layer.attention.cached_tokens(context_len)
        for layer in layers
    )


@_kept_per_layers
def _routed_expert_params(layers) -> int:
    return sum(layer.routed_expert_params for layer in layers)


@_kept_per_layers
def _moe_layers(layers) -> tuple[tuple[int, int, int], ...]:
    """(n_experts, top_k, one expert's parameters) of each mixture-of-experts layer."""
    return tuple(
        (layer.mlp.n_experts, layer.mlp.top_k, layer.expert_params)
        for layer in layers
        if layer.mlp.kind == "moe"
    )


@dataclass(frozen=True)
class DecodeWork:
    """One decode step of ``batch`` sequences: ``flops`` (2 per active parameter per token, plus
    attention over the context), ``weight_bytes`` read (the shared weights and the routed
    experts the batch touches), ``kv_bytes`` read (every sequence's cache); of the routed
    experts' ``expert_params`` parameters, the ``experts_read_params`` the step reads (their
    expected number under the router's distribution)."""

    flops: float
    weight_bytes: float
    kv_bytes: float
    experts_read_params: float
    expert_params: int

    @property
    def bytes_read(self) -> float:
        return self.weight_bytes + self.kv_bytes


def weight_bytes_read(config, tokens, *, weight_bytes_per_param, expert_bytes_per_param=None, skew=0.0):
    """(bytes, routed expert parameters) one step of ``config`` (an ``llms.LLMConfig``) reads
    from its weights while ``tokens`` tokens go through it at once: every weight but the routed
    experts (embeddings, attention, dense MLPs, routers, shared experts, the head) once, in
    ``weight_bytes_per_param``; in each MoE layer the :func:`experts_touched` experts
    (``skew``: the router's), in ``expert_bytes_per_param`` (default the same: gpt-oss keeps
    its experts in MXFP4, the rest in bf16)."""
    weight = checks.number("weight_bytes_per_param", weight_bytes_per_param)
    expert = weight if expert_bytes_per_param is None else expert_bytes_per_param
    expert = checks.number("expert_bytes_per_param", expert)
    routed = _routed_expert_params(config.layers)
    read = _experts_read_params(config.layers, tokens, skew)
    return (config.n_params - routed) * weight + read * expert, read


@_kept_per_layers
def _experts_read_params(layers, tokens, skew) -> float:
    """Routed expert parameters one step of ``tokens`` tokens reads over ``layers``: in each MoE
    layer the :func:`experts_touched` experts (:func:`weight_bytes_read`'s)."""
    return sum(
        experts_touched(n_experts, top_k, tokens, skew=skew) * expert_params
        for n_experts, top_k, expert_params in _moe_layers(layers)
    )


def held_weight_bytes(config, *, weight_bytes_per_param, expert_bytes_per_param=None) -> float:
    """Bytes of every weight of ``config`` in memory: :func:`weight_bytes_read` with every expert
    touched (a mixture of experts holds them all)."""
    return weight_bytes_read(
        config,
        math.inf,
        weight_bytes_per_param=weight_bytes_per_param,
        expert_bytes_per_param=expert_bytes_per_param,
    )[0]


def decode_work(
    config,
    *,
    batch,
    context_len,
    weight_bytes_per_param,
    kv_bytes_per_value,
    expert_bytes_per_param=None,
    skew=0.0,
) -> DecodeWork:
    """What one decode step of ``config`` (an ``llms.LLMConfig``) does: ``batch`` sequences
    with ``context_len`` tokens in their KV caches make one token each. Reads the weights the
    batch's tokens touch (:func:`weight_bytes_read`) and each sequence's KV cache
    (:func:`kv_values_per_sequence`); computes 2 FLOPs per active parameter and the attention
    over the context (:func:`decode_attention_flops`) per sequence."""
    batch = checks.count("batch", batch)
    kv = checks.number("kv_bytes_per_value", kv_bytes_per_value)
    weight_bytes, read = weight_bytes_read(
        config,
        batch,
        weight_bytes_per_param=weight_bytes_per_param,
        expert_bytes_per_param=expert_bytes_per_param,
        skew=skew,
    )
    per_token = FLOPS_PER_PARAM_PER_TOKEN["inference"] * config.params_per_token
    flops = batch * (per_token + decode_attention_flops(config.layers, context_len))
    return DecodeWork(
        flops=flops,
        weight_bytes=weight_bytes,
        kv_bytes=batch * kv * kv_values_per_sequence(config.layers, context_len),
        experts_read_params=read,
        expert_params=_routed_expert_params(config.layers),
    )


def step_bound_s(*, flops, bytes_read, peak_flops, bandwidth_bytes_per_s) -> float:
    """Seconds of one step at least (the roofline): max(flops / peak, bytes read / bandwidth).
    ``peak_flops`` None leaves the compute bound out (a bandwidth-only bound)."""
    flops = checks.number("flops", flops, strict=False)
    bytes_read = checks.number("bytes_read", bytes_read, strict=False)
    bandwidth = checks.number("bandwidth_bytes_per_s", bandwidth_bytes_per_s)
    compute_s = 0.0 if peak_flops is None else flops / checks.number("peak_flops", peak_flops)
    return max(compute_s, bytes_read / bandwidth)
