"""From FLOPs to hours to dollars: fine-tuning cost, serving cost per token, API vs self-hosting.

Formulas (sources in each docstring):

- compute: training ≈ 6·N·D FLOPs (forward 2ND, backward 4ND; Kaplan et al., arXiv 2001.08361),
  LoRA ≈ 4·N·D (frozen weights get no weight gradients; Hu et al., arXiv 2106.09685),
  inference ≈ 2·N per token; for a model of known shape, plus the attention scores and their
  weighted sum (:func:`attention_flops_per_token`), as practice counts MFU;
- time: hours = FLOPs / (peak FLOP/s x MFU x devices) / 3600 (MFU: model FLOPs utilisation,
  Chowdhery et al., PaLM, arXiv 2204.02311), the MFU by regime (:func:`mfu_assumption`);
- serving: decode at batch 1 is bandwidth bound, tokens/s <= bandwidth / bytes of weights
  (batches, prefill and the KV cache: ``lab_utils.serving``);
  self-hosted $ per 1M tokens = $/h / (tokens/s x 3600) x 1e6;
- break-even: the monthly token volume at which self-hosting (fine-tune cost included) costs
  what the API costs.

Prices live in ``lab_utils/data/prices.toml``, each with its date and source, read by
``lab_utils.prices`` (import it where a cell reads a price). Money in US dollars, time in
seconds or hours as the names say. Pure Python: no torch.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from lab_utils import assumptions, basics, checks, energy, hardware, interconnects, llms, memory, prices
from lab_utils.prices import SECONDS_PER_HOUR

__all__ = [
    "ATTENTION_TERMS",
    "FLOPS_PER_PARAM_PER_TOKEN",
    "HOURS_PER_MONTH",
    "DoesNotFit",
    "FineTuneEstimate",
    "ServingCosts",
    "api_cost",
    "attention_flops_per_token",
    "blended_price_per_million",
    "breakeven_tokens_per_month",
    "cost_per_million_tokens",
    "decode_tokens_per_s_bound",
    "fine_tune_estimate",
    "mfu_assumption",
    "range_verdict",
    "serving_costs",
    "training_flops",
    "training_hours",
]

HOURS_PER_MONTH = 730.0
"""Hours in an average month: 365 x 24 / 12, the month cloud providers bill."""

FLOPS_PER_PARAM_PER_TOKEN = {"full": 6, "lora": 4, "qlora": 4, "inference": 2}
"""FLOPs per parameter per token: training forward 2 + backward 4 (2 for the input gradients,
2 for the weight gradients, which LoRA and QLoRA skip for the frozen weights); inference 2.
QLoRA also dequantizes its 4-bit weights on the fly: more time at the same FLOP count."""

ATTENTION_TERMS = ("causal", "non_causal", "none")
"""How :func:`training_flops` counts the attention scores and their weighted sum, FLOPs that no
parameter stands for: "causal", each token attends to the tokens before it (half the
sequence on average), what fused kernels compute (FlashAttention-2, Dao, arXiv 2307.08691,
counts its causal FLOPs so); "non_causal", every token to every token, PaLM's
12·layers·heads·head_dim·seq_len per training token (arXiv 2204.02311, appendix B), as
torchtitan and Megatron-LM count MFU; "none", the parameters only: 6·N·D (Kaplan)."""

_ATTENTION_PASSES = {"full": 3, "lora": 3, "qlora": 3, "inference": 1}
"""Attention FLOPs of a step in forward passes: backward takes the gradients of both the
scores' operands (2 forward passes' worth) whatever is frozen, since attention has no weights."""


# --- compute and time ----------------------------------------------------------------------


def attention_flops_per_token(model, seq_len, *, causal: bool = True) -> float:
    """Forward FLOPs per token of the attention scores (Q·Kᵀ) and their weighted sum (·V) of
    ``model`` (an ``llms`` name or LLMConfig) over sequences of ``seq_len`` tokens, layer by
    layer (its owner: ``basics.attention_flops_per_token``): 2 x heads x (head_dim + v_head_dim)
    x the keys a query sees: ``seq_len`` (``causal`` False), half of it causal; in a
    sliding-window layer of w below seq_len, w - w²/(2·seq_len) causal.

    Llama-3.1-8B at 8,192 tokens, causal: 4 x 32 x 4,096 x 4,096 = 2.1e9, against 2·N = 1.6e10.
    """
    config = llms.as_config(model)
    if not config.layers:
        raise ValueError(
            f"model={config.name!r}: its layers are not in lab_utils/data/llm_configs.toml; "
            f"give attention_term='none'"
        )
    return basics.attention_flops_per_token(config.layers, seq_len, causal=causal)


def training_flops(
    n_params, n_tokens, method: str = "full", *, model=None, seq_len=None, attention_term: str | None = None
) -> float:
    """FLOPs to process ``n_tokens`` tokens with a model of ``n_params`` parameters.

    method "full": 6·N·D (Kaplan et al., arXiv 2001.08361; GPT-3, 175B x 300B tokens:
    3.15e23); "lora" and "qlora": 4·N·D; "inference": 2·N·D. With ``model`` (its shape) and
    ``seq_len``, plus the attention term (:data:`ATTENTION_TERMS`; None: the ``attention_term``
    assumption, "causal"): :func:`attention_flops_per_token` x D, three times for training (its
    backward takes both operands' gradients), once for inference: 13% more for Llama-3.1-8B at
    8,192 tokens, fine-tuned in full. Without ``model`` the count is the parameters' only
    (``attention_term`` "none", 6·N·D).
    """
    n_params = checks.number("n_params", n_params)
    n_tokens = checks.number("n_tokens", n_tokens)
    if method not in FLOPS_PER_PARAM_PER_TOKEN:
        raise ValueError(f"method={method!r} is not allowed; use one of {tuple(FLOPS_PER_PARAM_PER_TOKEN)}")
    flops = FLOPS_PER_PARAM_PER_TOKEN[method] * n_params * n_tokens
    if model is None:
        if attention_term not in (None, "none"):
            raise ValueError(
                f"attention_term={attention_term!r} needs model= and seq_len= (the attention's shape)"
            )
        return flops
    term = checks.choice(
        "attention_term",
        assumptions.resolve(attention_term=attention_term)[0]["attention_term"],
        ATTENTION_TERMS,
    )
    if term == "none":
        return flops
    if seq_len is None:
        raise ValueError(
            "seq_len: give the sequence length to count the attention term (or attention_term='none')"
        )
    per_token = attention_flops_per_token(model, seq_len, causal=term == "causal")
    return flops + _ATTENTION_PASSES[method] * per_token * n_tokens


def mfu_assumption(n_gpus: int, dtype: str) -> str:
    """The name of the MFU assumption for a training job on ``n_gpus`` GPUs computing in
    ``dtype``: "mfu_fp8" for an FP8 recipe, "mfu_multi_gpu" (FSDP or ZeRO) beyond one GPU,
    else "mfu_single_gpu" (LoRA, QLoRA or a small full fine-tune on one GPU)."""
    n_gpus = checks.count("n_gpus", n_gpus)
    if dtype == "fp8":
        return "mfu_fp8"
    return "mfu_multi_gpu" if n_gpus > 1 else "mfu_single_gpu"


def training_hours(flops, *, peak_flops, mfu, n_devices: int = 1) -> float:
    """Wall-clock hours for ``flops`` on ``n_devices`` devices of ``peak_flops`` FLOP/s each,
    reaching the fraction ``mfu`` (0 < mfu <= 1) of the peak: flops / (peak x mfu x n) / 3600.

    MFU of large runs: PaLM 540B 46%, Llama 3 405B 38-43% (dense BF16 peaks).
    """
    flops = checks.number("flops", flops)
    peak_flops = checks.number("peak_flops", peak_flops)
    mfu = checks.number("mfu", mfu, maximum=1.0)
    n_devices = checks.count("n_devices", n_devices)
    return flops / (peak_flops * mfu * n_devices) / SECONDS_PER_HOUR


# --- serving ---------------------------------------------------------------------------------


def cost_per_million_tokens(usd_per_hour, tokens_per_s) -> float:
    """Dollars per 1M tokens on a machine rented at ``usd_per_hour`` that produces
    ``tokens_per_s`` (the formula: ``prices.usd_per_million_tokens``)."""
    return prices.usd_per_million_tokens(usd_per_hour, tokens_per_s)


def api_cost(input_tokens, output_tokens, *, price_in_per_million, price_out_per_million) -> float:
    """Dollars an API charges for ``input_tokens`` read and ``output_tokens`` written."""
    input_tokens = checks.number("input_tokens", input_tokens, strict=False)
    output_tokens = checks.number("output_tokens", output_tokens, strict=False)
    price_in = checks.number("price_in_per_million", price_in_per_million, strict=False)
    price_out = checks.number("price_out_per_million", price_out_per_million, strict=False)
    return (input_tokens * price_in + output_tokens * price_out) / 1e6


def blended_price_per_million(price_in_per_million, price_out_per_million, output_share) -> float:
    """Dollars per 1M tokens of traffic in which ``output_share`` (0 to 1) of the tokens are
    written and the rest read: the API price a workload actually pays per token."""
    output_share = checks.number("output_share", output_share, strict=False, maximum=1.0)
    return api_cost(
        1e6 * (1 - output_share),
        1e6 * output_share,
        price_in_per_million=price_in_per_million,
        price_out_per_million=price_out_per_million,
    )


def decode_tokens_per_s_bound(
    n_params,
    *,
    bytes_per_param,
    bandwidth_bytes_per_s,
    batch: int = 1,
    peak_flops=None,
    context_len=None,
    kv_bytes_per_value=None,
) -> float:
    """Upper bound on generated tokens/s: each decode step reads the weights once and makes one
    token per sequence of the batch: tokens/s <= batch / step, the step the roofline
    (``basics.step_bound_s``) of ``basics.decode_work``'s FLOPs and bytes. ``n_params``: a
    parameter count (every weight read, 2·N FLOPs per token; no KV cache: give the model for
    that), or a model (an ``llms`` name or LLMConfig): a mixture of experts reads the experts
    the batch touches, and each sequence's KV cache at ``context_len`` tokens (required then;
    ``kv_bytes_per_value`` default the assumption) is read too. ``peak_flops`` None: bandwidth
    only. Measured: an RTX 4090 decodes a 7B 4-bit model at 191 tokens/s
    (mlc-ai/llm-perf-bench) against a bound of about 280.
    """
    bytes_per_param = checks.number("bytes_per_param", bytes_per_param)
    batch = checks.count("batch", batch)
    if isinstance(n_params, (str, llms.LLMConfig)):
        if context_len is None:
            raise ValueError("context_len: give the tokens in each KV cache to bound a model's decode")
        kv = assumptions.resolve(kv_bytes_per_value=kv_bytes_per_value)[0]["kv_bytes_per_value"]
        work = basics.decode_work(
            llms.as_config(n_params),
            batch=batch,
            context_len=context_len,
            weight_bytes_per_param=bytes_per_param,
            kv_bytes_per_value=kv,
        )
        flops, bytes_read = work.flops, work.bytes_read
    else:
        n_params = checks.number("n_params", n_params)
        flops = FLOPS_PER_PARAM_PER_TOKEN["inference"] * n_params * batch
        bytes_read = n_params * bytes_per_param
    step_s = basics.step_bound_s(
        flops=flops, bytes_read=bytes_read, peak_flops=peak_flops, bandwidth_bytes_per_s=bandwidth_bytes_per_s
    )
    return batch / step_s


def _peak_flops(spec: hardware.Spec, dtype) -> tuple[str, float]:
    """(dtype, dense peak FLOP/s) of ``spec``: ``dtype`` when given, else the one it computes in."""
    dtype = assumptions.compute_dtype(spec) if dtype is None else dtype
    if dtype not in spec.peak_flops:
        raise ValueError(f"dtype={dtype!r}: {spec.name} has peaks for {tuple(spec.peak_flops)}")
    return dtype, spec.peak_flops[dtype]


@dataclass(frozen=True)
class ServingCosts:
    """Dollars per month to serve ``tokens_per_month`` three ways (fine-tune cost amortised
    into both self-hosted ways): the API; a GPU billed only while it works at ``tokens_per_s``
    (pay per use, fully busy: no cold start, no idle second, a full batch: the floor of any
    serverless bill); enough GPUs kept on all month (always on). For real traffic, cold starts
    and idle time included, ask ``advisor.serve`` (``lab-utils pick serve``)."""

    tokens_per_month: float
    api_per_month_usd: float
    pay_per_use_per_month_usd: float
    always_on_per_month_usd: float
    always_on_gpus: int
    gpu_hours_per_month: float

    @property
    def cheapest(self) -> str:
        """'api', 'pay per use' or 'always on'."""
        costs = {
            "api": self.api_per_month_usd,
            "pay per use": self.pay_per_use_per_month_usd,
            "always on": self.always_on_per_month_usd,
        }
        return min(costs, key=costs.get)


def _serving_inputs(
    api_cost_per_million, usd_per_hour, tokens_per_s, fine_tune_cost, amortize_months, always_on_usd_per_hour
):
    amortize_months = assumptions.resolve(amortize_months=amortize_months)[0]["amortize_months"]
    api = checks.number("api_cost_per_million", api_cost_per_million, strict=False)
    price = checks.number("usd_per_hour", usd_per_hour, strict=False)
    tokens_per_s = checks.number("tokens_per_s", tokens_per_s)
    fixed = checks.number("fine_tune_cost", fine_tune_cost, strict=False) / checks.number(
        "amortize_months", amortize_months
    )
    always_price = (
        price
        if always_on_usd_per_hour is None
        else checks.number("always_on_usd_per_hour", always_on_usd_per_hour, strict=False)
    )
    return api, price, tokens_per_s, fixed, always_price


def serving_costs(
    tokens_per_month,
    *,
    api_cost_per_million,
    usd_per_hour,
    tokens_per_s,
    fine_tune_cost=0.0,
    amortize_months=None,
    always_on_usd_per_hour=None,
) -> ServingCosts:
    """Monthly cost of ``tokens_per_month`` on an API at ``api_cost_per_million`` (blended:
    :func:`blended_price_per_million`) and self-hosted on GPUs making ``tokens_per_s`` each
    (``serving.estimate``). Pay per use bills the GPU-seconds used at ``usd_per_hour``;
    always on bills whole GPUs for :data:`HOURS_PER_MONTH` at ``always_on_usd_per_hour``
    (default ``usd_per_hour``). ``fine_tune_cost`` is spread over ``amortize_months`` (default:
    the assumption)."""
    tokens = checks.number("tokens_per_month", tokens_per_month, strict=False)
    api, price, tokens_per_s, fixed, always_price = _serving_inputs(
        api_cost_per_million,
        usd_per_hour,
        tokens_per_s,
        fine_tune_cost,
        amortize_months,
        always_on_usd_per_hour,
    )
    gpu_hours = tokens / tokens_per_s / SECONDS_PER_HOUR
    gpus = max(1, math.ceil(gpu_hours / HOURS_PER_MONTH))
    return ServingCosts(
        tokens_per_month=tokens,
        api_per_month_usd=tokens / 1e6 * api,
        pay_per_use_per_month_usd=fixed + gpu_hours * price,
        always_on_per_month_usd=fixed + gpus * HOURS_PER_MONTH * always_price,
        always_on_gpus=gpus,
        gpu_hours_per_month=gpu_hours,
    )


def breakeven_tokens_per_month(
    *,
    api_cost_per_million,
    usd_per_hour,
    tokens_per_s,
    fine_tune_cost=0.0,
    amortize_months=None,
    always_on=False,
    always_on_usd_per_hour=None,
) -> float:
    """The fewest tokens per month at which self-hosting costs no more than the API
    (same inputs as :func:`serving_costs`: a GPU fully busy whenever billed, so pay per use is
    a floor, no cold start or idle time; ``advisor.serve`` prices real traffic); ``math.inf``
    when it never does.

    Pay per use: both costs grow linearly, so break-even = monthly fine-tune share /
    (API $ per token - self-hosted $ per token). Always on: the first volume at which the API
    bill reaches the cost of the GPUs needed for that volume.
    """
    api, price, tokens_per_s, fixed, always_price = _serving_inputs(
        api_cost_per_million,
        usd_per_hour,
        tokens_per_s,
        fine_tune_cost,
        amortize_months,
        always_on_usd_per_hour,
    )
    if not always_on:
        self_hosted = cost_per_million_tokens(price, tokens_per_s)
        if fixed == 0:
            return 0.0 if self_hosted <= api else math.inf
        return fixed / (api - self_hosted) * 1e6 if api > self_hosted else math.inf
    capacity = tokens_per_s * SECONDS_PER_HOUR * HOURS_PER_MONTH  # tokens per GPU-month
    per_gpu = always_price * HOURS_PER_MONTH
    if api == 0 or capacity / 1e6 * api <= per_gpu:
        return math.inf  # a fully used GPU costs more than the API for the same tokens
    # with k GPUs (up to k x capacity tokens) the bills meet at (fixed + k x per_gpu) / api;
    # the fewest k for which that volume fits in k GPUs: k >= fixed / (api x capacity - per_gpu)
    api_per_token = api / 1e6
    gpus = max(1, math.ceil(fixed / (api_per_token * capacity - per_gpu)))
    if (fixed + gpus * per_gpu) / api_per_token > gpus * capacity:  # rounding at the boundary
        gpus += 1
    return (fixed + gpus * per_gpu) / api_per_token


# --- fine-tuning a real model ----------------------------------------------------------------


@dataclass(frozen=True)
class FineTuneEstimate:
    """Hours, GPUs and dollars for one fine-tune of a public model on one catalog GPU type.

    ``n_gpus``: the fewest that hold the job's memory (``memory.job_estimate``, split evenly),
    unless given; beyond one server, whole servers of ``max_devices`` GPUs (``n_nodes``).
    ``hours`` is wall clock on ``n_gpus``; ``gpu_hours`` what is billed. ``flops``: the model's
    FLOPs (6·N·D or 4·N·D, plus ``attention_flops``, the attention term, where the model's
    shape is known); ``hardware_flops``: what the GPUs execute, one more forward pass with full
    recomputation; ``mfu`` the share of the ``dtype`` peak the job reaches (its regime's
    assumption, :func:`mfu_assumption`, unless given).
    ``price_source``: where the price per GPU-hour comes from; ``assumptions``: (name, value)
    of each default the estimate took from ``lab_utils.assumptions`` (arguments given are not
    listed).
    """

    model: str
    method: str
    gpu: str
    n_gpus: int
    n_tokens: float
    mfu: float
    dtype: str
    flops: float
    memory_bytes: float
    hours: float
    usd_per_gpu_hour: float | None
    price_source: str
    assumptions: tuple[tuple[str, object], ...] = ()
    hardware_flops: float | None = None  # what the GPUs execute: flops + the recomputed forward pass
    n_nodes: int = 1  # servers of max_devices GPUs rented (jobs beyond one server take whole ones)
    attention_flops: float = 0.0  # the attention term, included in flops
    price_date: str = "given"  # the date of the price (YYYY-MM, YYYY or "undated"), "given" when passed in
    offload: str | None = None  # memory.OFFLOADS: state in the host's RAM (ZeRO-Offload, ZeRO-Infinity)
    host: str | None = None  # the CPU beside the GPU when offloading
    host_bytes: float = 0.0  # what the host's RAM holds
    iteration_parts: tuple[tuple[str, float], ...] = ()  # offload: seconds of one iteration, by part

    @property
    def gpu_hours(self) -> float:
        return self.hours * self.n_gpus

    @property
    def hfu(self) -> float:
        """Hardware FLOPs utilisation: the share of the peak spent on the FLOPs executed,
        recomputation included (``mfu`` counts only the model's FLOPs)."""
        return self.mfu * (self.hardware_flops or self.flops) / self.flops

    @property
    def cost_usd(self) -> float | None:
        """Dollars: GPU-hours x price per GPU-hour (None without a price)."""
        if self.usd_per_gpu_hour is None:
            return None
        return self.gpu_hours * self.usd_per_gpu_hour

    @property
    def energy_kwh(self) -> float | None:
        """kWh the GPUs draw over the job (TDP x ``power_share_of_tdp``, lab_utils.energy; the
        building's share, PUE, not counted); None without a TDP in the catalog."""
        tdp_watts = hardware.as_spec(self.gpu).tdp_watts
        return energy.job_energy_kwh(self.hours, self.n_gpus, tdp_watts) if tdp_watts else None

    @property
    def joules_per_token(self) -> float | None:
        """Joules per training token: ``energy_kwh`` over ``n_tokens`` (= one GPU's watts x
        FLOPs per token / (peak x mfu): the GPU count cancels); None without a TDP."""
        kwh = self.energy_kwh
        return None if kwh is None else kwh * energy.JOULES_PER_KWH / self.n_tokens


def fine_tune_estimate(
    model,
    n_tokens,
    *,
    method=None,
    gpu=None,
    mfu=None,
    usd_per_gpu_hour=None,
    dtype=None,
    n_gpus=None,
    seq_len=None,
    batch=None,
    recompute=None,
    lora_rank=None,
    max_devices=None,
    attention_term=None,
    offload=None,
    host=None,
) -> FineTuneEstimate:
    """Estimate a fine-tune of ``model`` (an ``llms`` name or LLMConfig) over ``n_tokens``.

    FLOPs: :func:`training_flops` with the model's parameters per token and, where its shape is
    known, the attention term at ``seq_len`` (``attention_term``); time: :func:`training_hours`
    at the GPU's dense ``dtype`` peak; memory: ``memory.job_estimate`` in the method's
    precision. Every argument left None takes its default from ``lab_utils.assumptions``: mfu
    by the job's regime (:func:`mfu_assumption`: one GPU, several with FSDP/ZeRO, an FP8
    recipe), the dtype the GPU computes in, sequence length, batch, recomputation, LoRA rank,
    the attention term, the method (``default_method``), the GPU (``default_gpu``), GPUs per
    server (``max_devices``) and the price that stands for the GPU (its cheapest rentable
    offer; ``cost_usd`` is None when the data has none). More than one GPU for a full
    fine-tune: ZeRO-3 as DeepSpeed reserves it (``memory.zero3_bytes_per_gpu``). ``offload``
    (``memory.OFFLOADS``) keeps state in the RAM of ``host`` (default the ``offload_host``
    assumption) on one GPU, and each iteration pays for it (:func:`_offloaded_iteration`).
    """
    config = llms.as_config(model)
    values, taken = assumptions.resolve(
        default_method=method,
        default_gpu=gpu,
        seq_len=seq_len,
        batch=batch,
        recompute_fine_tune=recompute,
        lora_rank=lora_rank,
        max_devices=max_devices,
    )
    method = checks.choice("method", values["default_method"], assumptions.FINE_TUNE_METHODS)
    spec = hardware.as_spec(values["default_gpu"])
    if dtype is None:
        taken["compute_dtypes"] = assumptions.compute_dtype(spec)
    dtype, peak = _peak_flops(spec, dtype)
    if usd_per_gpu_hour is None:
        price = assumptions.device_price(spec)
        price_usd, price_source = price.usd_per_hour, f"{price.offer} ({price.source}, {price.date})"
        taken["price_rule"], price_date = price.offer, price.date
    else:
        price_usd = checks.number("usd_per_gpu_hour", usd_per_gpu_hour, strict=False)
        price_source, price_date = "given", "given"
    estimate = memory.job_estimate(
        config,
        method=method,
        batch=values["batch"],
        seq_len=values["seq_len"],
        recompute=values["recompute_fine_tune"],
        lora_rank=values["lora_rank"],
        offload=offload,
    )
    taken[f"precision.{method}"] = estimate.precision
    if offload is not None:
        if n_gpus not in (None, 1):
            raise ValueError(f"n_gpus={n_gpus!r}: offload is estimated on one GPU")
        n_gpus = 1
    n_gpus = _gpus_for(config, estimate, spec) if n_gpus is None else checks.count("n_gpus", n_gpus)
    per_node = checks.count("max_devices", values["max_devices"])
    n_nodes = math.ceil(n_gpus / per_node)
    if n_nodes == 1:
        taken.pop("max_devices", None)
    else:  # beyond one server: whole servers, priced as such where the data has one
        n_gpus = n_nodes * per_node
        if usd_per_gpu_hour is None:
            price = assumptions.device_price(spec, n_gpus=n_gpus)
            price_usd, price_source = price.usd_per_hour, f"{price.offer} ({price.source}, {price.date})"
            taken["price_rule"], price_date = price.offer, price.date
    if mfu is None:
        regime = mfu_assumption(n_gpus, dtype)
        taken[regime] = mfu = assumptions.value(regime)
    mfu = checks.number("mfu", mfu, maximum=1.0)
    shape = {}
    if (
        config.n_heads is not None or attention_term is not None
    ):  # a term given for a model without a shape: an error
        if attention_term is None:
            taken["attention_term"] = attention_term = assumptions.value("attention_term")
        shape = dict(model=config, seq_len=estimate.seq_len, attention_term=attention_term)
    parameters_only = training_flops(config.params_per_token, n_tokens, method)
    flops = training_flops(config.params_per_token, n_tokens, method, **shape)
    recomputed = (
        training_flops(config.params_per_token, n_tokens, "inference", **shape)
        if estimate.recompute == "full"
        else 0.0
    )
    if mfu * (flops + recomputed) / flops > 1:
        raise ValueError(f"mfu={mfu}: with full recomputation the GPUs would execute more than their peak")
    hours = training_hours(flops, peak_flops=peak, mfu=mfu, n_devices=n_gpus)
    parts, host_name = (), None
    if offload is not None:
        if host is None:
            taken["offload_host"] = host = assumptions.value("offload_host")
        iterations = n_tokens / (estimate.batch * estimate.seq_len)
        trainable = (
            config.n_params
            if method == "full"
            else memory.lora_params(config, values["lora_rank"], assumptions.value("lora_targets"))
        )
        parts, host_name = _offloaded_iteration(
            config, trainable, offload, spec, host, hours * SECONDS_PER_HOUR / iterations
        )
        hours = iterations * sum(seconds for _, seconds in parts) / SECONDS_PER_HOUR
    return FineTuneEstimate(
        model=config.name,
        method=method,
        gpu=spec.name,
        n_gpus=n_gpus,
        n_tokens=float(n_tokens),
        mfu=mfu,
        dtype=dtype,
        flops=flops,
        memory_bytes=estimate.total_bytes,
        hours=hours,
        usd_per_gpu_hour=price_usd,
        price_source=price_source,
        assumptions=tuple(taken.items()),
        hardware_flops=flops + recomputed,
        n_nodes=n_nodes,
        price_date=price_date,
        attention_flops=flops - parameters_only,
        offload=offload,
        host=host_name,
        host_bytes=estimate.host_bytes,
        iteration_parts=parts,
    )


def _offloaded_iteration(config, trainable, offload, gpu, host, compute_s):
    """(("GPU compute", s), ("PCIe", s), ("CPU Adam", s)) of one iteration whose forward and
    backward take ``compute_s`` on ``gpu``, and the host's name. ZeRO-Offload ("optimizer"):
    16-bit gradients go down while backward runs (2 bytes per trainable parameter, hidden behind
    it when shorter), the CPU runs Adam (the ``cpu_adam_bytes_per_param`` assumption over the
    host's bandwidth), then the updated 16-bit weights come up (2 bytes per trainable parameter).
    ZeRO-Infinity ("optimizer+params"): the 16-bit weights come up for forward and again for
    backward and the gradients go down, all while the GPU computes (6 bytes per parameter), then
    Adam. PCIe: the GPU's link one way (``interconnects``), theoretical: a lower bound on time."""
    host_spec = hardware.as_spec(host)
    if host_spec.kind != "cpu" or not host_spec.bandwidth_bytes_per_s:
        raise ValueError(f"host={host_spec.name!r}: give a CPU with a memory bandwidth in the catalog")
    link = interconnects.get(gpu.name).pcie_bytes_per_s_each_way
    adam_s = trainable * assumptions.value("cpu_adam_bytes_per_param") / host_spec.bandwidth_bytes_per_s
    if offload == "optimizer":
        during_s, after_s = 2 * trainable / link, 2 * trainable / link
    else:
        during_s, after_s = 6 * config.n_params / link, 0.0
    exposed_s = max(0.0, during_s - compute_s) + after_s
    return (("GPU compute", compute_s), ("PCIe", exposed_s), ("CPU Adam", adam_s)), host_spec.name


_MANY_GPUS = 2**30
"""More GPUs than any job rents: ZeRO-3's shards per GPU at this count are the gathered module alone."""


class DoesNotFit(ValueError):
    """No number of GPUs of one type holds the job (what each GPU keeps besides its shards is too much)."""


def _gpus_for(config: llms.LLMConfig, estimate, spec: hardware.Spec) -> int:
    """The fewest GPUs that hold the job: its total split evenly; a full fine-tune on more than
    one GPU by ZeRO-3 as DeepSpeed reserves it (``memory.zero3_bytes_per_gpu``: 18 bytes per
    parameter over the GPUs plus the largest module gathered), beside what each GPU holds besides
    the model state (its activations and the loss at its peak)."""
    n_gpus = memory.gpus_needed(estimate.total_bytes, spec)
    if estimate.method != "full" or n_gpus == 1 or config.family is None:
        return n_gpus
    state = sum(estimate.part(label) for label in ("weights", "gradients", "optimizer states"))
    per_gpu = estimate.total_bytes - state
    if not memory.fits(memory.zero3_bytes_per_gpu(config, _MANY_GPUS) + per_gpu, spec):
        raise DoesNotFit(
            f"gpu={spec.name!r}: each GPU holds {per_gpu / 1e9:.1f} GB of activations and loss beside "
            "its ZeRO-3 shards and the gathered module, more than it has: no number of GPUs holds the "
            "job (a shorter sequence, a chunked loss or a larger GPU would)"
        )
    while not memory.fits(memory.zero3_bytes_per_gpu(config, n_gpus) + per_gpu, spec):
        n_gpus += 1
    return n_gpus


# --- claim checks ----------------------------------------------------------------------------


def range_verdict(claimed, low, high, tolerance=None) -> str:
    """Compare a claimed figure with the range [low, high] that sourced figures give.

    'consistent' inside the range widened by ``tolerance`` (default: the ``range_tolerance``
    assumption); otherwise 'wrong: Nx too low' or 'wrong: Nx too high', N measured from the nearer
    end of the range.
    """
    claimed = checks.number("claimed", claimed)
    low = checks.number("low", low)
    high = checks.number("high", high, minimum=low, strict=False)
    tolerance = checks.number(
        "tolerance",
        assumptions.resolve(range_tolerance=tolerance)[0]["range_tolerance"],
        strict=False,
        maximum=1.0,
    )
    if low * (1 - tolerance) <= claimed <= high * (1 + tolerance):
        return "consistent"
    if claimed < low:
        return f"wrong: {low / claimed:.1f}x too low"
    return f"wrong: {claimed / high:.1f}x too high"
