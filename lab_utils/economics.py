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
  the monthly bills, API against self-hosting, and their break-even: ``lab_utils.bills``
  (named here too: ``economics.serving_costs``, ``economics.api_cost``, ...);
- any run's hours and dollars, CPU or GPU: :func:`run_estimate`; a fine-tune of a catalog LLM:
  :func:`fine_tune_estimate`.

Prices live in ``lab_utils/data/prices.toml``, each with its date and source, read by
``lab_utils.prices`` (import it where a cell reads a price). Money in US dollars, time in
seconds or hours as the names say. Pure Python: no torch.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from lab_utils import assumptions, basics, checks, energy, hardware, interconnects, llms, memory, splits
from lab_utils.basics import FLOPS_PER_PARAM_PER_TOKEN, HOURS_PER_MONTH
from lab_utils.bills import (  # the serving bills, named here too
    ServingCosts,
    api_cost,
    blended_price_per_million,
    breakeven_tokens_per_month,
    cost_per_million_tokens,
    serving_costs,
)
from lab_utils.prices import SECONDS_PER_HOUR

__all__ = [
    "ATTENTION_TERMS",
    "FLOPS_PER_PARAM_PER_TOKEN",
    "HOURS_PER_MONTH",
    "DoesNotFit",
    "FineTuneEstimate",
    "RunEstimate",
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
    "run_estimate",
    "sharded_communication",
    "serving_costs",
    "training_flops",
    "training_hours",
]

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
    method = checks.choice("method", method, assumptions.METHODS)
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


# --- one job on one device type: the price of any run, CPU or GPU ---------------------------------


@dataclass(frozen=True)
class RunEstimate:
    """Hours and dollars of one job on ``n_devices`` of the catalog ``device`` (a CPU server or
    a GPU): ``hours`` wall clock, the larger of the compute time (FLOPs at ``mfu`` of the
    ``dtype`` peak) and the memory time (bytes moved at a share of the bandwidth), ``bound``
    saying which. ``n_servers``: servers rented (beyond one, whole servers: ``n_devices`` is
    then what they hold). ``price``: the price that stands for one device-hour
    (``assumptions.device_price``), or the one given; its ``usd_per_hour`` None when the data has
    none. ``assumptions``: (name, value) of each default taken. ``communication_hours``: the
    bytes the devices exchange (FSDP's gathers and gradient reductions) at the pace of their
    links, overlapped with compute (``hours`` is the longest of the three): bound "interconnect"
    (inside one server) or "network" (across servers) when it is the longest; ``notes``: what
    the estimate could not time."""

    device: str
    kind: str
    n_devices: int
    n_servers: int
    dtype: str
    mfu: float
    hours: float
    bound: str
    price: assumptions.DevicePrice
    assumptions: tuple[tuple[str, object], ...] = ()
    communication_hours: float = 0.0
    notes: tuple[str, ...] = ()

    @property
    def device_hours(self) -> float:
        """Device-hours billed: every device for the whole job."""
        return self.hours * self.n_devices

    @property
    def cost_per_job_usd(self) -> float | None:
        """Dollars for the job: device-hours x price per device-hour (None without a price)."""
        usd = self.price.usd_per_hour
        return None if usd is None else self.device_hours * usd

    @property
    def energy_per_job_kwh(self) -> float | None:
        """kWh the devices draw over the job at ``power_share_of_tdp`` of their TDP
        (``energy.job_energy_kwh``); None without a TDP in the catalog."""
        tdp_watts = hardware.as_spec(self.device).tdp_watts
        return energy.job_energy_kwh(self.hours, self.n_devices, tdp_watts) if tdp_watts else None


def run_estimate(
    device,
    flops,
    *,
    n_devices=1,
    mfu=None,
    dtype=None,
    bytes_moved=0.0,
    bandwidth_efficiency=1.0,
    usd_per_hour=None,
    max_devices=None,
    cpu_offer=None,
    communication=None,
) -> RunEstimate:
    """Price one job of ``flops`` (moving ``bytes_moved`` at ``bandwidth_efficiency`` of the
    memory bandwidth) on ``n_devices`` of ``device``, CPU or GPU: the one place a run's hours
    and dollars are computed (``fine_tune_estimate`` and every option of ``advisor`` ask it).

    GPUs are rented in server shapes (``assumptions.server_shapes``: 3 GPUs rent a 4-GPU server)
    and beyond one server of ``max_devices`` (None: the assumption) as whole servers
    (``basics.whole_servers``), priced as such; ``communication`` (a function of the devices
    rented, the bytes each sends over the job; None: nothing) is timed at their links' pace
    (``splits.job_link``); hours by :func:`training_hours` at the dense
    peak in ``dtype`` (``basics.peak_flops``; None: the dtype the device computes in); ``mfu``
    None is the regime's assumption: ``cpu_mfu`` on a CPU, :func:`mfu_assumption` on GPUs;
    ``usd_per_hour`` None is the price that stands for the device (``assumptions.device_price``,
    a CPU's from ``cpu_offer``). ValueError when the catalog lacks the peak, or the bandwidth a
    job moving bytes needs."""
    spec = hardware.as_spec(device)
    flops = checks.number("flops", flops)
    bytes_moved = checks.number("bytes_moved", bytes_moved, strict=False)
    values, taken = assumptions.resolve(max_devices=max_devices)
    shapes = assumptions.server_shapes(spec, values["max_devices"]) if spec.kind == "gpu" else None
    n_servers, n_devices = basics.whole_servers(n_devices, values["max_devices"], shapes)
    if shapes and n_devices > 1:
        taken["server_gpu_counts"] = assumptions.value("server_gpu_counts")
    if n_servers == 1:
        taken.pop("max_devices", None)
    if dtype is None:
        dtype = taken["compute_dtypes"] = basics.peak_flops(spec)[0]
    dtype, peak = basics.peak_flops(spec, dtype)
    if mfu is None:
        regime = "cpu_mfu" if spec.kind == "cpu" else mfu_assumption(n_devices, dtype)
        mfu = taken[regime] = assumptions.value(regime)
    if usd_per_hour is None:
        price = assumptions.device_price(
            spec, cpu_offer=cpu_offer, n_gpus=n_devices, max_devices=values["max_devices"]
        )
        taken["price_rule"] = price.offer
    else:
        price = assumptions.DevicePrice(
            checks.number("usd_per_hour", usd_per_hour, strict=False), "given", "given", "given"
        )
    compute_h = training_hours(flops, peak_flops=peak, mfu=mfu, n_devices=n_devices)
    memory_h = 0.0
    if bytes_moved:
        if not spec.bandwidth_bytes_per_s:
            raise ValueError(
                f"device={spec.name!r}: the catalog has no memory bandwidth to time the bytes moved"
            )
        efficiency = checks.number("bandwidth_efficiency", bandwidth_efficiency, maximum=1.0)
        memory_h = bytes_moved / (spec.bandwidth_bytes_per_s * efficiency * n_devices) / SECONDS_PER_HOUR
    communication_h, notes = _communication_hours(
        spec, n_devices, values["max_devices"], communication, taken
    )
    hours = {"compute": compute_h, "bandwidth": memory_h}
    hours["network" if n_servers > 1 else "interconnect"] = communication_h
    bound = max(hours, key=hours.get)
    return RunEstimate(
        device=spec.name,
        kind=spec.kind,
        n_devices=n_devices,
        n_servers=n_servers,
        dtype=dtype,
        mfu=checks.number("mfu", mfu, maximum=1.0),
        hours=hours[bound],
        bound=bound,
        price=price,
        assumptions=tuple(taken.items()),
        communication_hours=communication_h,
        notes=notes,
    )


def _communication_hours(spec, n_devices, per_server, communication, taken) -> tuple[float, tuple[str, ...]]:
    """Hours the ``communication(n_devices)`` bytes per device take at the pace of the job's
    links (``splits.job_link``), and a note when the data has no links for the device."""
    if communication is None or n_devices == 1:
        return 0.0, ()
    try:
        link = splits.job_link(spec, n_devices, per_server)
    except ValueError:
        return 0.0, (
            f"{spec.name}: no link data (lab_utils/data/interconnects.toml): communication not timed",
        )
    taken.update(link.assumptions)
    sent = checks.number("communication", communication(n_devices), strict=False)
    return sent / link.bytes_per_s / SECONDS_PER_HOUR, ()


def sharded_communication(n_params, n_tokens, *, method: str, tokens_per_step):
    """The bytes each of n GPUs sends over a fine-tune of ``n_params`` on ``n_tokens`` tokens,
    sharded (``splits.sharded_fine_tune``), each GPU taking ``tokens_per_step`` tokens (batch x
    sequence) per step: a function of n, as :func:`run_estimate`'s ``communication`` takes it."""
    n_params = checks.number("n_params", n_params)
    n_tokens = checks.number("n_tokens", n_tokens)
    tokens_per_step = checks.count("tokens_per_step", tokens_per_step)

    def sent(n_gpus: int) -> float:
        steps = n_tokens / (n_gpus * tokens_per_step)
        return steps * splits.sharded_fine_tune(n_params, n_gpus, method=method).bytes_per_step

    return sent


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
    price_date: str = "given"  # the date of the price (YYYY-MM or YYYY), "given" when passed in
    run: RunEstimate | None = None  # the run's hours and dollars as run_estimate priced them
    gpus_needed: int | None = None  # the fewest that hold it (memory.gpus_to_hold); n_gpus: rented
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
        """Dollars for the job: GPU-hours x price per GPU-hour (``RunEstimate.cost_per_job_usd``;
        None without a price)."""
        return self.run.cost_per_job_usd

    @property
    def energy_kwh(self) -> float | None:
        """kWh the GPUs draw over the job (``RunEstimate.energy_per_job_kwh``: TDP x
        ``power_share_of_tdp``; the building's share, PUE, not counted); None without a TDP."""
        return self.run.energy_per_job_kwh

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
    )
    method = checks.choice("method", values["default_method"], assumptions.FINE_TUNE_METHODS)
    spec = hardware.as_spec(values["default_gpu"])
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
    needed = memory.gpus_to_hold(config, estimate, spec) if n_gpus is None else checks.count("n_gpus", n_gpus)
    if usd_per_gpu_hour is not None:
        usd_per_gpu_hour = checks.number("usd_per_gpu_hour", usd_per_gpu_hour, strict=False)
    shape = {}
    if (
        config.n_heads is not None or attention_term is not None
    ):  # a term given for a model without a shape: an error
        term = assumptions.resolve(attention_term=attention_term)
        taken.update(term[1])
        shape = dict(model=config, seq_len=estimate.seq_len, attention_term=term[0]["attention_term"])
    parameters_only = training_flops(config.params_per_token, n_tokens, method)
    flops = training_flops(config.params_per_token, n_tokens, method, **shape)
    run = run_estimate(
        spec,
        flops,
        n_devices=needed,
        mfu=mfu,
        dtype=dtype,
        usd_per_hour=usd_per_gpu_hour,
        max_devices=max_devices,
        communication=sharded_communication(
            config.n_params, n_tokens, method=method, tokens_per_step=estimate.batch * estimate.seq_len
        ),
    )
    taken.update(run.assumptions)
    recomputed = (
        training_flops(config.params_per_token, n_tokens, "inference", **shape)
        if estimate.recompute == "full"
        else 0.0
    )
    if run.mfu * (flops + recomputed) / flops > 1:
        raise ValueError(
            f"mfu={run.mfu}: with full recomputation the GPUs would execute more than their peak"
        )
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
            config, trainable, offload, spec, host, run.hours * SECONDS_PER_HOUR / iterations
        )
        run = dataclasses.replace(run, hours=iterations * sum(s for _, s in parts) / SECONDS_PER_HOUR)
    price = run.price
    given = usd_per_gpu_hour is not None
    return FineTuneEstimate(
        model=config.name,
        method=method,
        gpu=spec.name,
        n_gpus=run.n_devices,
        n_tokens=float(n_tokens),
        mfu=run.mfu,
        dtype=run.dtype,
        flops=flops,
        memory_bytes=estimate.total_bytes,
        hours=run.hours,
        usd_per_gpu_hour=price.usd_per_hour,
        price_source="given" if given else f"{price.offer} ({price.source}, {price.date})",
        assumptions=tuple(taken.items()),
        hardware_flops=flops + recomputed,
        n_nodes=run.n_servers,
        price_date="given" if given else price.date,
        attention_flops=flops - parameters_only,
        run=run,
        gpus_needed=needed,
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


DoesNotFit = memory.DoesNotFit
"""No number of GPUs of one type holds the job (``memory.gpus_to_hold``)."""


# --- claim checks ----------------------------------------------------------------------------


def range_verdict(claimed, low, high, tolerance=None) -> str:
    """Compare a claimed figure with the range [low, high] that sourced figures give.

    'consistent' inside the range widened by ``tolerance`` (default: the ``range_tolerance``
    assumption); otherwise 'wrong: Nx too low' or
    'wrong: Nx too high', N measured from the nearer end of the range.
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
