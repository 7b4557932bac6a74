"""Fine-tuning a catalog LLM: :func:`fine_tune_estimate` (GPUs that hold it, hours, dollars, and a
ZeRO-Offload iteration's parts). Named by ``lab_utils.economics``. Pure Python: no torch.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from lab_utils import assumptions, checks, energy, hardware, interconnects, llms, memory
from lab_utils.economics_flops import (
    training_flops,
)
from lab_utils.economics_run import RunEstimate, run_estimate, sharded_communication
from lab_utils.prices import SECONDS_PER_HOUR

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
