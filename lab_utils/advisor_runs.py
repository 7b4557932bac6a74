"""The advisor's time-bound jobs: one fine-tune (:func:`fine_tune`) or one training run
(:func:`train`), every catalog device ranked by the cost of the job.

No arithmetic of its own: memory from ``lab_utils.memory``, FLOPs from
``economics.training_flops``, and each option's hours and dollars from
``economics.run_estimate`` (a catalog LLM's GPU options from ``economics.fine_tune_estimate``,
which asks it too), so a CPU and a GPU are priced by the same code. Pure Python: no torch.
"""

from __future__ import annotations

import dataclasses

from lab_utils import assumptions, checks, economics, llms, memory
from lab_utils.advisor_options import (
    Advice,
    Option,
    catalog_devices,
    checked_cpu_offer,
    devices_needed,
    not_possible,
    period_fields,
    price_fields,
)
from lab_utils.basics import bytes_per_value

__all__ = ["fine_tune", "train"]


def _option(run: economics.RunEstimate, memory_bytes) -> Option:
    """A priced run (``economics.run_estimate``) as an Option of a job."""
    n, name = run.n_devices, run.device
    if n > 1:
        name = f"{n} x {run.device}" + (f" ({run.n_servers} servers)" if run.n_servers > 1 else "")
    cost = run.cost_per_job_usd
    return Option(
        name=name,
        kind=run.kind,
        device=run.device,
        n_devices=n,
        fits=True,
        hours=run.hours,
        bound=run.bound,
        why=None if cost is not None else "no price in the data for this device",
        memory_bytes=memory_bytes,
        **period_fields(
            "job", cost_usd=cost, energy_kwh=run.energy_per_job_kwh, device_hours=run.device_hours
        ),
        **price_fields(run.price),
    )


def _run_options(memory_bytes, flops, bytes_moved, specs, *, gpu_mfu, cpu_mfu, max_devices, cpu_offer, **run):
    """One option per device of ``specs`` for a job of ``flops`` that moves ``bytes_moved`` and
    must hold ``memory_bytes``, each priced by ``economics.run_estimate`` (``gpu_mfu`` None: each
    GPU option at its regime's MFU). A GPU job beyond one server of ``max_devices`` rents whole
    servers where ``run`` has ``servers=True``; else it cannot run."""
    servers = run.pop("servers", False)
    options = []
    for spec in specs:
        n = devices_needed(memory_bytes, spec)
        common = dict(kind=spec.kind, device=spec.name, period="job", bytes_=memory_bytes)
        if n == 0 or (n > max_devices and not servers):
            why = (
                "does not fit in one server's memory"
                if n == 0
                else f"needs {n} GPUs to hold the job: more than one server of {max_devices} (max_devices)"
            )
            options.append(
                not_possible(
                    spec.name if n == 0 else f"{n} x {spec.name}",
                    fits=False,
                    n=max(n, 1),
                    bound="memory",
                    why=why,
                    price=assumptions.device_price(spec, cpu_offer=cpu_offer),
                    **common,
                )
            )
            continue
        mfu = cpu_mfu if spec.kind == "cpu" else gpu_mfu
        try:
            estimate = economics.run_estimate(
                spec,
                flops,
                n_devices=n,
                mfu=mfu,
                bytes_moved=bytes_moved,
                max_devices=max_devices,
                cpu_offer=cpu_offer,
                **run,
            )
        except ValueError:  # no peak in a dtype it computes in, or no bandwidth
            options.append(
                not_possible(
                    spec.name if n == 1 else f"{n} x {spec.name}",
                    fits=True,
                    n=n,
                    bound="compute",
                    why="the catalog has no peak or bandwidth to estimate its speed",
                    price=assumptions.device_price(spec, cpu_offer=cpu_offer),
                    **common,
                )
            )
            continue
        options.append(_option(estimate, memory_bytes))
    return options


def _fine_tune_keywords(spec, method, mfu, job, max_devices) -> dict:
    """The keywords of ``economics.fine_tune_estimate`` for one GPU's option of the job."""
    return dict(
        gpu=spec,
        method=method,
        mfu=mfu,
        seq_len=job["seq_len"],
        batch=job["batch"],
        recompute=job["recompute_fine_tune"],
        lora_rank=job["lora_rank"],
        max_devices=max_devices,
    )


def _fine_tune_option(config, n_tokens, method, spec, mfu, job, max_devices) -> Option:
    """One GPU's option for a fine-tune of a catalog LLM: ``economics.fine_tune_estimate``."""
    common = dict(kind="gpu", device=spec.name, period="job")
    try:
        estimate = economics.fine_tune_estimate(
            config, n_tokens, **_fine_tune_keywords(spec, method, mfu, job, max_devices)
        )
    except economics.DoesNotFit as why:
        return not_possible(spec.name, fits=False, n=1, bytes_=None, bound="memory", why=str(why), **common)
    except ValueError as why:  # no peak in a dtype the course computes in
        return not_possible(spec.name, fits=True, n=1, bytes_=None, bound="compute", why=str(why), **common)
    n = estimate.n_gpus
    if estimate.n_nodes > 1 and estimate.usd_per_gpu_hour is None:  # e.g. a laptop's GPU: no servers of it
        return not_possible(
            f"{n} x {spec.name}",
            fits=False,
            n=n,
            bytes_=estimate.memory_bytes,
            bound="memory",
            why=f"needs {n} GPUs: more than one server, and the data has no offer to rent it by the server",
            **common,
        )
    return _option(estimate.run, estimate.memory_bytes)


def _hybrid_fine_tune_option(config, n_tokens, method, spec, mfu, job, max_devices) -> Option | None:
    """One GPU too small for the job, with training state in its host's RAM as ZeRO-Offload
    places it (``memory.OFFLOADS``, the optimizer first): ``economics.fine_tune_estimate`` with
    ``offload``, the first placement whose GPU bytes fit the GPU; None when the job fits the GPU
    alone (its whole-GPU option covers it) or no placement fits."""
    if not spec.memory_bytes:
        return None
    common = _fine_tune_keywords(spec, method, mfu, job, max_devices)
    for offload in memory.OFFLOADS:
        try:
            estimate = economics.fine_tune_estimate(config, n_tokens, offload=offload, **common)
        except ValueError:  # no peak in a dtype the course computes in, or no PCIe link in the catalog
            return None
        gpu_bytes = estimate.memory_bytes  # the GPU's share (memory.JobEstimate.total_bytes)
        if gpu_bytes + estimate.host_bytes <= spec.memory_bytes:  # fits whole: no reason to offload
            return None
        if gpu_bytes <= spec.memory_bytes:
            option = _option(estimate.run, gpu_bytes)
            return dataclasses.replace(
                option, name=f"{spec.name} + {estimate.host} host, {offload} in RAM (ZeRO-Offload)"
            )
    return None


def _common(cpu_mfu, max_devices, cpu_offer):
    """The checked (cpu_mfu, max_devices, cpu_offer) and the assumptions taken for them."""
    values, taken = assumptions.resolve(cpu_mfu=cpu_mfu, max_devices=max_devices, cpu_offer=cpu_offer)
    checked = (
        checks.number("cpu_mfu", values["cpu_mfu"], maximum=1.0),
        checks.count("max_devices", values["max_devices"]),
        checked_cpu_offer(values["cpu_offer"]),
    )
    return checked, taken


def _energy_assumptions():
    return tuple((name, assumptions.value(name)) for name in ("power_share_of_tdp", "grid_kg_co2e_per_kwh"))


def fine_tune(
    model,
    n_tokens,
    *,
    method: str | None = None,
    mfu: float | None = None,
    cpu_mfu: float | None = None,
    seq_len: int | None = None,
    batch: int | None = None,
    recompute: str | None = None,
    lora_rank: int | None = None,
    max_devices: int | None = None,
    cpu_offer: str | None = None,
    include_cpus: bool = True,
) -> Advice:
    """Rank the hardware for one fine-tune of ``model`` (an ``llms`` name or a parameter count)
    over ``n_tokens`` tokens with ``method`` "full", "lora" or "qlora".

    Memory: ``memory.job_estimate`` in the method's precision (activations of ``batch`` x
    ``seq_len`` with ``recompute``). For a bare parameter count only the weights and, for full,
    the optimizer state are known: the total is a lower bound. FLOPs: ``economics.training_flops``
    (6ND full, 4ND LoRA/QLoRA, and the attention term where the model's shape is known); hours and
    dollars by ``economics.run_estimate`` at ``mfu`` of the dense peak in the dtype each device
    computes in (left None: each GPU option at its regime's MFU, ``economics.mfu_assumption``;
    ``cpu_mfu`` on CPUs); GPUs split the job evenly and scale perfectly (a lower bound on hours);
    GPUs are rented in server shapes (1, 2, 4 or 8: ``assumptions.server_shapes``), beyond one
    server of ``max_devices`` GPUs as whole servers, priced as such; sharded GPUs exchange the
    weights and gradients (``economics.sharded_communication``) at their links' pace, and an
    option whose exchanges outlast its compute is bound by "interconnect" or "network" and
    ranked after the others. Every argument left
    None is the assumption of the same name in ``lab_utils.assumptions`` (seq_len: ``seq_len``;
    batch: ``batch``; recompute: ``recompute_fine_tune``).
    """
    given = dict(model=model, n_tokens=n_tokens, method=method, mfu=mfu, cpu_mfu=cpu_mfu)
    given.update(seq_len=seq_len, batch=batch, recompute=recompute, lora_rank=lora_rank)
    given.update(max_devices=max_devices, cpu_offer=cpu_offer)
    values, taken = assumptions.resolve(default_method=method)
    method = checks.choice("method", values["default_method"], assumptions.FINE_TUNE_METHODS)
    if mfu is not None:
        mfu = checks.number("mfu", mfu, maximum=1.0)
    (cpu_mfu, max_devices, cpu_offer), common = _common(cpu_mfu, max_devices, cpu_offer)
    taken.update(common)
    job, job_taken = assumptions.resolve(
        seq_len=seq_len, batch=batch, recompute_fine_tune=recompute, lora_rank=lora_rank
    )
    taken.update(job_taken)
    n_tokens = checks.number("n_tokens", n_tokens)
    precision = assumptions.precision_for(method)
    taken[f"precision.{method}"] = precision
    if isinstance(model, (str, llms.LLMConfig)):
        config = llms.as_config(model)
        estimate = memory.job_estimate(
            config,
            method=method,
            precision=precision,
            batch=job["batch"],
            seq_len=job["seq_len"],
            recompute=job["recompute_fine_tune"],
            lora_rank=job["lora_rank"],
        )
        memory_bytes, n_compute, label = estimate.total_bytes, config.params_per_token, config.name
    else:  # a bare count: the weights and training state it tells of, a lower bound
        config, n_params = None, checks.number("model", model)
        memory_bytes = sum(value for _, value in memory.param_count_parts(n_params, method, precision))
        n_compute, label = n_params, f"{n_params:.3g}-parameter model"
    shape = {}
    if config is not None and config.n_heads is not None:
        term = taken["attention_term"] = assumptions.value("attention_term")
        shape = dict(model=config, seq_len=job["seq_len"], attention_term=term)
    flops = economics.training_flops(n_compute, n_tokens, method, **shape)
    specs = catalog_devices(include_cpus)
    gpu_options = []
    if config is not None:  # a catalog model: each GPU is economics.fine_tune_estimate's answer
        gpu_options = [
            _fine_tune_option(config, n_tokens, method, spec, mfu, job, max_devices)
            for spec in specs
            if spec.kind == "gpu"
        ]
        if method == "full":  # the optimizer and parameters of a full fine-tune, in the host's RAM
            hybrid = (
                _hybrid_fine_tune_option(config, n_tokens, method, spec, mfu, job, max_devices)
                for spec in specs
                if spec.kind == "gpu"
            )
            gpu_options += [option for option in hybrid if option is not None]
        specs = tuple(spec for spec in specs if spec.kind != "gpu")
    options = _run_options(
        memory_bytes,
        flops,
        0.0,
        specs,
        gpu_mfu=mfu,
        cpu_mfu=cpu_mfu,
        max_devices=max_devices,
        cpu_offer=cpu_offer,
        servers=True,
        communication=economics.sharded_communication(
            config.n_params if config is not None else n_compute,
            n_tokens,
            method=method,
            tokens_per_step=job["batch"] * job["seq_len"],
        ),
    )
    if mfu is None:  # the regimes the GPU options took (economics.mfu_assumption)
        taken.update((name, assumptions.value(name)) for name in ("mfu_single_gpu", "mfu_multi_gpu"))
    return Advice.ranking(
        f"{method} fine-tune of {label} on {n_tokens:.3g} tokens",
        "job",
        (*options, *gpu_options),
        assumptions=(*taken.items(), *_energy_assumptions()),
        given=tuple((k, v) for k, v in given.items() if v is not None),
        derived=(("memory_bytes", memory_bytes), ("flops", flops)),
    )


def train(
    dense_params,
    n_examples,
    *,
    tokens_per_example: int = 1,
    embedding_params: float = 0,
    lookups_per_example: int = 0,
    embedding_dim: int = 128,
    embedding_bytes_per_param: float | None = None,
    mfu: float | None = None,
    cpu_mfu: float | None = None,
    gather_efficiency: float | None = None,
    max_devices: int | None = None,
    cpu_offer: str | None = None,
    include_cpus: bool = True,
) -> Advice:
    """Rank the hardware for a training run: a dense network of ``dense_params`` parameters over
    ``n_examples`` examples (x ``tokens_per_example``), plus, for a sparse model such as a
    recommender, an embedding table of ``embedding_params`` values read ``lookups_per_example``
    rows of ``embedding_dim`` at a time.

    Dense part: 6·N·D FLOPs (``economics.training_flops``), mixed-precision Adam state
    (``memory.training_state_bytes``). Embedding table: ``embedding_bytes_per_param`` bytes per
    value (Adam would need 12); each lookup reads its row and reads and writes it again in the
    update (3 x dim fp32 values), at ``gather_efficiency`` of the memory bandwidth, because random
    rows use memory far worse than streaming. Activations and the all-to-all between GPUs holding
    shards of the table are left out: hours are a lower bound. mfu, cpu_mfu, max_devices,
    cpu_offer, embedding_bytes_per_param and gather_efficiency left None are the assumptions of
    those names.
    """
    given = {k: v for k, v in locals().items() if v is not None}
    (cpu_mfu, max_devices, cpu_offer), taken = _common(cpu_mfu, max_devices, cpu_offer)
    sparse, sparse_taken = assumptions.resolve(
        mfu=mfu, embedding_bytes_per_param=embedding_bytes_per_param, gather_efficiency=gather_efficiency
    )
    taken.update(sparse_taken)
    mfu = checks.number("mfu", sparse["mfu"], maximum=1.0)
    embedding_bytes_per_param = checks.number(
        "embedding_bytes_per_param", sparse["embedding_bytes_per_param"]
    )
    gather_efficiency = checks.number("gather_efficiency", sparse["gather_efficiency"], maximum=1.0)
    dense_params = checks.number("dense_params", dense_params)
    n_examples = checks.number("n_examples", n_examples)
    tokens_per_example = checks.count("tokens_per_example", tokens_per_example)
    embedding_params = checks.number("embedding_params", embedding_params, strict=False)
    lookups = checks.count("lookups_per_example", lookups_per_example, minimum=0)
    embedding_dim = checks.count("embedding_dim", embedding_dim)
    if embedding_params and not lookups:
        raise ValueError(
            "lookups_per_example=0: a model with an embedding table must look rows up (give >= 1)"
        )
    if lookups and not embedding_params:
        raise ValueError("embedding_params=0: lookups_per_example needs an embedding table (give its size)")
    memory_bytes = (
        memory.training_state_bytes(dense_params).total_bytes + embedding_params * embedding_bytes_per_param
    )
    flops = economics.training_flops(dense_params, n_examples * tokens_per_example, "full")
    bytes_moved = n_examples * lookups * 3 * embedding_dim * bytes_per_value("fp32")
    kind = "sparse" if embedding_params else "dense"
    options = _run_options(
        memory_bytes,
        flops,
        bytes_moved,
        catalog_devices(include_cpus),
        gpu_mfu=mfu,
        cpu_mfu=cpu_mfu,
        max_devices=max_devices,
        cpu_offer=cpu_offer,
        bandwidth_efficiency=gather_efficiency,
    )
    return Advice.ranking(
        f"{kind} training run, {dense_params:.3g} dense parameters"
        + (f" + {embedding_params:.3g}-value embedding table" if embedding_params else "")
        + f", {n_examples:.3g} examples",
        "job",
        options,
        assumptions=(*taken.items(), *_energy_assumptions()),
        given=tuple(given.items()),
        derived=(("memory_bytes", memory_bytes), ("flops", flops), ("bytes_moved", bytes_moved)),
    )
