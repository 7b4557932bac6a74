"""The CPU and the GPU together: a model larger than the GPU, split between them.

Three placements practitioners use, each a keyword of :func:`estimate`:

- ``gpu_layers=N``, llama.cpp's ``-ngl N``: the last N transformer blocks on the GPU, the
  others (and the input embedding and output head, until every block is on the GPU) in the
  host's RAM, computed by the CPU.
- ``cpu_moe_layers=N`` (llama.cpp's ``--n-cpu-moe N``; ``experts_on_host=True`` is
  ``--cpu-moe``, every layer): the routed experts of the first N blocks stay in RAM and the
  CPU computes them; attention, shared experts and the KV cache stay on the GPU.
- ``stream_bytes=S``, vLLM's ``--cpu-offload-gb``: S bytes of weights live in RAM and cross
  PCIe to the GPU at every step; the GPU computes everything.

One decode step (``batch`` sequences, one token each) is, at least, the GPU's part (its weights
and KV cache at HBM bandwidth, or its FLOPs at its peak: ``basics.decode_work`` and
``basics.step_bound_s``, as ``serving`` reads them), plus
the host's part (the same at DRAM bandwidth and the CPU's peak), plus the link: each hidden
state that crosses between them, and the streamed weights, over PCIe. The parts run one after
the other (a token goes through the layers in order), so their times add.

Prefill, as llama.cpp does it for a large batch: the GPU computes its own layers; each host
layer is either copied to the GPU over PCIe and computed there, or computed by the CPU at its
matrix peak (AMX where the catalog has it), whichever is faster.

The input embedding and the output head are counted as ``serving`` counts them (read whole at
each step), on the GPU once every block is there, else on the host: with this accounting all
on the GPU is exactly ``serving.decode_step_s`` on the GPU, and all on the host exactly
``serving.decode_step_s`` on the CPU. Pure arithmetic: no torch.

>>> split = estimate("Llama-3.1-8B", gpu="RTX 4090", host="Ryzen 9 7950X", gpu_layers=24,
...                  precision="q4_0", engine="bound")
>>> split.gpu_layers, round(split.decode_bound_tokens_per_s, 1)
(24, 45.3)
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from lab_utils import (
    assumptions,
    basics,
    checks,
    engines,
    hardware,
    interconnects,
    llms,
    memory,
    serving,
    units,
)

__all__ = [
    "GGUF_FORMATS",
    "OffloadEstimate",
    "estimate",
    "fitting_placements",
    "bytes_per_weight",
]

GGUF_FORMATS = tuple(assumptions.value("weight_format_bits"))
"""Weight formats beyond ``serving.PRECISIONS``: GGUF's q4_0, q4_k_m, q8_0 and MXFP4; their bits
per weight are the ``weight_format_bits`` assumption."""

_SERVED_AS = {"q4_0": "int4", "q4_k_m": "int4", "q8_0": "int8", "mxfp4": "int4"}
"""The ``serving`` precision each format computes as: weight-only, 16-bit compute."""


def bytes_per_weight(precision: str) -> float:
    """Bytes per weight of a GGUF or MXFP4 ``precision`` (the ``weight_format_bits`` assumption / 8),
    or of a plain dtype (``basics.bytes_per_value``).

    >>> bytes_per_weight("q4_0"), bytes_per_weight("bf16")
    (0.5625, 2)
    """
    checks.choice("precision", precision, tuple(basics.BYTES_PER_VALUE) + GGUF_FORMATS)
    if precision in GGUF_FORMATS:
        return assumptions.value("weight_format_bits")[precision] / 8
    return basics.bytes_per_value(precision)


@dataclass(frozen=True)
class _Share:
    """What one device holds of a model, shaped as ``basics`` reads a model: its ``layers`` (whole
    blocks, or blocks less their routed experts), their parameters (``n_params``) and those one
    token uses (``params_per_token``), the embedding and head included where it holds them; and
    ``expert_layers``, the blocks whose routed experts alone it holds (llama.cpp's --n-cpu-moe)."""

    layers: tuple = ()
    n_params: int = 0
    params_per_token: int = 0
    expert_layers: tuple = ()


def _without_experts(layer):
    """``layer`` less its routed experts: what stays on the GPU under --n-cpu-moe."""
    mlp = dataclasses.replace(layer.mlp, kind="dense", n_experts=0, top_k=0)
    return dataclasses.replace(layer, mlp=mlp, expert_params=0)


def _shares(config: llms.LLMConfig, gpu_layers: int, cpu_moe: int) -> tuple[_Share, _Share, int]:
    """(the GPU's share, the host's share, hidden states crossing PCIe per token): the last
    ``gpu_layers`` blocks on the GPU, the routed experts of the first ``cpu_moe`` in RAM."""
    n = len(config.layers)
    gpu, host, experts, crossings = [], [], [], 2 if 0 < gpu_layers < n else 0
    for i, layer in enumerate(config.layers):
        if i < n - gpu_layers:
            host.append(layer)
        elif i < cpu_moe and layer.mlp.kind == "moe":
            gpu.append(_without_experts(layer))
            experts.append(layer)
            crossings += 2  # the hidden state to the host's experts and back
        else:
            gpu.append(layer)
    ends = config.embedding_params + config.head_params

    def share(layers, with_ends, expert_layers=()):
        extra = ends if with_ends else 0
        return _Share(
            tuple(layers),
            sum(layer.params for layer in layers) + extra,
            sum(layer.active_params for layer in layers) + extra,
            tuple(expert_layers),
        )

    return share(gpu, gpu_layers == n), share(host, gpu_layers < n, experts), crossings


@dataclass(frozen=True)
class OffloadEstimate:
    """One model split between a GPU and its host. ``placement`` in words; ``gpu_layers`` blocks on
    the GPU, ``cpu_moe_layers`` blocks whose routed experts stay in RAM, ``stream_bytes`` of
    weights crossing PCIe each step. ``gpu_bytes`` / ``host_bytes``: weights and KV cache (at
    ``context_len``, ``batch`` sequences) on each; ``fits``: the GPU's share fits its memory less
    the CUDA context (``memory.fits``) and the host's its RAM (``host_memory_bytes``). A decode
    step's parts at least: ``gpu_s``, ``host_s``, ``link_s`` (their sum ``decode_step_s``);
    ``decode_bound_tokens_per_s`` = batch / that; ``decode_tokens_per_s`` through the ``engine``
    profile (``engine_notes``: parts left at the bound). ``prefill_tokens_per_s``: a batch of
    prompts of ``prompt_len`` tokens, at least; ``prefill_host_path``: "copied to the GPU" or
    "computed on the host" (the faster, for the host's weights)."""

    model: str
    gpu: str
    host: str
    placement: str
    precision: str
    weight_bytes_per_param: float
    gpu_layers: int
    n_layers: int
    cpu_moe_layers: int
    stream_bytes: float
    batch: int
    context_len: int
    prompt_len: int
    gpu_bytes: float
    host_bytes: float
    host_memory_bytes: float
    fits: bool
    gpu_s: float
    host_s: float
    link_s: float
    link_bytes_per_s: float | None  # None: nothing crosses (all on the GPU)
    decode_bound_tokens_per_s: float
    decode_tokens_per_s: float
    prefill_tokens_per_s: float
    prefill_host_path: str
    engine: str
    engine_notes: tuple[str, ...] = ()
    assumptions: tuple[tuple[str, object], ...] = ()  # (name, value) of each default taken

    @property
    def decode_step_s(self) -> float:
        return self.gpu_s + self.host_s + self.link_s


def _device(device, kind: str, name: str) -> hardware.Spec:
    spec = hardware.as_spec(device)
    if spec.kind != kind or not spec.bandwidth_bytes_per_s:
        raise ValueError(
            f"{name}={spec.name!r}: give a {kind} with a memory bandwidth in the catalog "
            f"(hardware.catalog({kind!r}))"
        )
    return spec


def _link(gpu: hardware.Spec, link_bytes_per_s, needed: bool) -> float | None:
    """The link's bytes/s one way: given, else the GPU's PCIe (``interconnects``); None when
    nothing crosses it and none was given."""
    if link_bytes_per_s is None and not needed:
        return None
    if link_bytes_per_s is not None:
        return checks.number("link_bytes_per_s", link_bytes_per_s)
    try:
        return interconnects.get(gpu.name).pcie_bytes_per_s_each_way
    except ValueError as error:
        raise ValueError(
            f"gpu={gpu.name!r} has no PCIe link in the catalog: give link_bytes_per_s"
        ) from error


def _placement(config, gpu_layers, cpu_moe_layers, experts_on_host, stream_bytes):
    """Checked (gpu_layers, cpu_moe_layers) and the placement in words."""
    n = len(config.layers)
    moe = config.is_moe
    if experts_on_host:
        if cpu_moe_layers not in (None, n):
            raise ValueError(
                "experts_on_host=True keeps every layer's experts on the host; drop cpu_moe_layers"
            )
        cpu_moe_layers = n
    if stream_bytes is not None and (gpu_layers is not None or cpu_moe_layers):
        raise ValueError(
            "stream_bytes (vLLM's --cpu-offload-gb) goes alone: drop gpu_layers and cpu_moe_layers"
        )
    gpu_layers = n if gpu_layers is None else checks.count("gpu_layers", gpu_layers, minimum=0)
    if gpu_layers > n:
        raise ValueError(
            f"gpu_layers={gpu_layers}: {config.name} has {n} transformer blocks; allowed 0 to {n}"
        )
    cpu_moe_layers = checks.count("cpu_moe_layers", cpu_moe_layers or 0, minimum=0)
    if cpu_moe_layers and not moe:
        raise ValueError(
            f"cpu_moe_layers={cpu_moe_layers}: {config.name} has no experts (not a mixture of experts)"
        )
    if cpu_moe_layers > n:
        raise ValueError(
            f"cpu_moe_layers={cpu_moe_layers}: {config.name} has {n} transformer blocks; allowed 0 to {n}"
        )
    experts = f"experts of {'every layer' if cpu_moe_layers == n else f'{cpu_moe_layers} layers'} in RAM"
    if stream_bytes is not None:
        words = f"{units.format_bytes(stream_bytes)} of weights streamed over PCIe each step"
    elif gpu_layers == n:
        words = f"{experts}, the rest on the GPU" if cpu_moe_layers else "all on the GPU"
    else:
        words = f"{gpu_layers} of {n} layers on the GPU" + (f", {experts}" if cpu_moe_layers else "")
    return gpu_layers, cpu_moe_layers, words


def estimate(
    model,
    *,
    gpu,
    host,
    gpu_layers=None,
    cpu_moe_layers=None,
    experts_on_host=False,
    stream_bytes=None,
    precision=None,
    weight_bytes_per_param=None,
    batch=1,
    context_len=None,
    prompt_len=None,
    link_bytes_per_s=None,
    host_memory_bytes=None,
    engine=None,
) -> OffloadEstimate:
    """``model`` split between ``gpu`` and ``host`` (catalog names or ``hardware.Spec``) as placed
    (see the module's docstring; nothing given: all on the GPU). ``precision``: one of
    ``serving.PRECISIONS`` or :data:`GGUF_FORMATS` (default the ``precision.inference``
    assumption); ``context_len`` and ``prompt_len`` default to the ``input_tokens`` assumption;
    ``link_bytes_per_s``: default the GPU's PCIe link (``interconnects``, one way, theoretical);
    ``host_memory_bytes``: the RAM the host has (default the most its platform takes);
    ``engine``: the profile applied to the bounds (default: the GPU's, ``engines.default_for``, for
    vLLM's streaming or all on the GPU; the ``offload_engine`` assumption for llama.cpp's splits)."""
    config = llms.as_config(model)
    if not config.layers:
        raise ValueError(f"model={config.name!r}: its layers are not in the catalog; it cannot be split")
    gpu_spec, host_spec = _device(gpu, "gpu", "gpu"), _device(host, "cpu", "host")
    gpu_layers, cpu_moe, words = _placement(config, gpu_layers, cpu_moe_layers, experts_on_host, stream_bytes)
    batch = checks.count("batch", batch)
    taken = {"activation_bytes_per_value": assumptions.value("activation_bytes_per_value")}
    if context_len is None or prompt_len is None:
        taken["input_tokens"] = assumptions.value("input_tokens")
    context_len = checks.count("context_len", taken["input_tokens"] if context_len is None else context_len)
    prompt_len = checks.count("prompt_len", taken["input_tokens"] if prompt_len is None else prompt_len)
    name = precision
    if precision is None:
        taken["precision.inference"] = name = assumptions.precision_for("inference")
    if precision in GGUF_FORMATS:
        name = _SERVED_AS[precision]
        if weight_bytes_per_param is None:
            weight_bytes_per_param = bytes_per_weight(precision)
            taken["weight_format_bits"] = assumptions.value("weight_format_bits")[precision]
    if config.is_moe:
        taken["routing_skew"] = assumptions.value("routing_skew")
    served = {
        where: (
            spec,
            serving.resolve_precision(
                name, device=spec, weight_bytes_per_param=weight_bytes_per_param, model=config
            ),
        )
        for where, spec in (("gpu", gpu_spec), ("host", host_spec))
    }
    gpu_share, host_share, crossings = _shares(config, gpu_layers, cpu_moe)
    shares = {"gpu": gpu_share, "host": host_share}
    held = {where: _held_bytes(shares[where], served[where][1], batch, context_len) for where in shares}
    stream = 0.0
    if stream_bytes is not None:
        stream = checks.number("stream_bytes", stream_bytes, maximum=held["gpu"][0])
    skew = taken.get("routing_skew", 0.0)
    gpu_s = _decode_s(shares["gpu"], *served["gpu"], batch, context_len, skew, stream)
    host_s = _decode_s(shares["host"], *served["host"], batch, context_len, skew)
    activation = config.hidden * taken["activation_bytes_per_value"] * batch
    needed = bool(crossings or stream or host_share.n_params or host_share.expert_layers)
    link = _link(gpu_spec, link_bytes_per_s, needed)
    link_s = (crossings * activation + stream) / link if needed else 0.0
    decode_bound_s = gpu_s + host_s + link_s
    prefill_s, path = _prefill_s(shares, served, held, stream, link, prompt_len, batch, skew)
    if (
        engine is None
        and stream_bytes is None
        and shares["host"].n_params + len(shares["host"].expert_layers)
    ):
        engine = taken["offload_engine"] = assumptions.value("offload_engine")  # llama.cpp's splits
    on_gpu = served["gpu"][1]
    times = engines.apply(
        engine,
        device=gpu_spec,
        weight_bytes_per_param=on_gpu.weight_bytes_per_param,
        prefill_s=prefill_s,
        batch_prefill_s=prefill_s,
        decode_step_s=decode_bound_s,
    )
    gpu_bytes = sum(held["gpu"]) - stream
    host_bytes = sum(held["host"]) + stream
    host_memory = host_spec.memory_bytes if host_memory_bytes is None else host_memory_bytes
    host_memory = checks.number("host_memory_bytes", host_memory)
    return OffloadEstimate(
        model=config.name,
        gpu=gpu_spec.name,
        host=host_spec.name,
        placement=words,
        precision=precision or on_gpu.label,
        weight_bytes_per_param=on_gpu.weight_bytes_per_param,
        gpu_layers=gpu_layers,
        n_layers=len(config.layers),
        cpu_moe_layers=cpu_moe,
        stream_bytes=stream,
        batch=batch,
        context_len=context_len,
        prompt_len=prompt_len,
        gpu_bytes=gpu_bytes,
        host_bytes=host_bytes,
        host_memory_bytes=host_memory,
        fits=memory.fits(max(gpu_bytes, 1.0), gpu_spec) and host_bytes <= host_memory,
        gpu_s=gpu_s,
        host_s=host_s,
        link_s=link_s,
        link_bytes_per_s=link,
        decode_bound_tokens_per_s=batch / decode_bound_s,
        decode_tokens_per_s=batch / times.decode_step_s,
        prefill_tokens_per_s=batch * prompt_len / times.batch_prefill_s,
        prefill_host_path=path,
        engine=times.engine,
        engine_notes=times.notes,
        assumptions=tuple(taken.items()),
    )


def _expert_bytes(served: serving.Precision) -> float:
    return served.expert_bytes_per_param or served.weight_bytes_per_param


def _held_bytes(
    share: _Share, served: serving.Precision, batch: int, context_len: int
) -> tuple[float, float]:
    """(weight bytes, KV-cache bytes) ``share`` holds: every weight, the routed experts in their
    bytes (gpt-oss: MXFP4), and ``batch`` sequences' KV caches (``basics.kv_values_per_sequence``)."""
    routed = sum(layer.routed_expert_params for layer in share.layers)
    alone = sum(layer.routed_expert_params for layer in share.expert_layers)
    weights = (share.n_params - routed) * served.weight_bytes_per_param + (routed + alone) * _expert_bytes(
        served
    )
    kv = batch * served.kv_bytes_per_value * basics.kv_values_per_sequence(share.layers, context_len)
    return weights, kv


def _experts_work(share: _Share, served: serving.Precision, tokens, skew) -> tuple[float, float]:
    """(FLOPs, bytes read) of the routed experts ``share`` holds alone, for ``tokens`` at once."""
    flops = 2.0 * tokens * sum(layer.mlp.top_k * layer.expert_params for layer in share.expert_layers)
    read = sum(
        basics.experts_touched(layer.mlp.n_experts, layer.mlp.top_k, tokens, skew=skew) * layer.expert_params
        for layer in share.expert_layers
    )
    return flops, read * _expert_bytes(served)


def _decode_s(share, spec, served, batch, context_len, skew, stream=0.0) -> float:
    """Seconds of ``share``'s part of one decode step on ``spec`` at least (``basics.decode_work``
    for its layers, plus its experts alone); ``stream`` bytes come over PCIe, not from memory."""
    if not share.n_params and not share.expert_layers:
        return 0.0
    work = basics.decode_work(
        share,
        batch=batch,
        context_len=context_len,
        weight_bytes_per_param=served.weight_bytes_per_param,
        expert_bytes_per_param=served.expert_bytes_per_param,
        kv_bytes_per_value=served.kv_bytes_per_value,
        skew=skew,
    )
    flops, read = _experts_work(share, served, batch, skew)
    return basics.step_bound_s(
        flops=work.flops + flops,
        bytes_read=work.bytes_read + read - stream,
        peak_flops=basics.peak_flops(spec, served.compute_dtype)[1],
        bandwidth_bytes_per_s=spec.bandwidth_bytes_per_s,
    )


def _prefill_s(shares, served, held, stream, link, prompt_len, batch, skew) -> tuple[float, str]:
    """Seconds to prefill ``batch`` prompts of ``prompt_len`` tokens at least, and how the host's
    weights take part. FLOPs per share: 2 x active parameters per token plus causal attention
    (``basics.attention_flops_per_token``, as ``serving.prefill_s`` counts them); the GPU never
    faster than one read of the weights the tokens touch. The host's weights are copied to the GPU
    (PCIe, then the GPU's peak) or computed by the CPU at its peak, whichever is faster."""
    tokens = batch * prompt_len
    flops, touched = {}, {}
    for where, share in shares.items():
        spec, precision = served[where]
        expert_flops, expert_read = _experts_work(share, precision, tokens, skew)
        attention = basics.attention_flops_per_token(share.layers, prompt_len) if share.layers else 0.0
        flops[where] = tokens * (2 * share.params_per_token + attention) + expert_flops
        touched[where] = (
            expert_read
            + basics.weight_bytes_read(
                share,
                tokens,
                weight_bytes_per_param=precision.weight_bytes_per_param,
                expert_bytes_per_param=precision.expert_bytes_per_param,
                skew=skew,
            )[0]
        )
    (gpu_spec, gpu_precision), (host_spec, host_precision) = served["gpu"], served["host"]
    gpu_peak = basics.peak_flops(gpu_spec, gpu_precision.compute_dtype)[1]
    gpu_s = (stream / link if stream else 0.0) + basics.step_bound_s(
        flops=flops["gpu"],
        bytes_read=touched["gpu"] - stream,
        peak_flops=gpu_peak,
        bandwidth_bytes_per_s=gpu_spec.bandwidth_bytes_per_s,
    )
    if not flops["host"]:
        return gpu_s, "none on the host"
    copied_s = max(held["host"][0] / link, flops["host"] / gpu_peak)
    computed_s = basics.step_bound_s(
        flops=flops["host"],
        bytes_read=touched["host"],
        peak_flops=basics.peak_flops(host_spec, host_precision.compute_dtype)[1],
        bandwidth_bytes_per_s=host_spec.bandwidth_bytes_per_s,
    )
    if copied_s <= computed_s:
        return gpu_s + copied_s, "copied to the GPU"
    return gpu_s + computed_s, "computed on the host"


def fitting_placements(model, *, gpu, host, host_memory_bytes=None, **options) -> tuple[OffloadEstimate, ...]:
    """The placements of ``model`` that fit ``gpu`` and ``host``, fastest first: all on the GPU
    when it fits; the most layers on the GPU that fit (``-ngl``); for a mixture of experts, the
    fewest layers' experts in RAM that fit (``--n-cpu-moe``). ``options`` go to :func:`estimate`."""
    common = dict(gpu=gpu, host=host, host_memory_bytes=host_memory_bytes, **options)
    n = estimate(model, **common).n_layers

    def largest(fits_at, low, high):  # the largest k in low..high with fits_at(k), else None
        if not fits_at(low):
            return None
        while low < high:
            middle = (low + high + 1) // 2
            low, high = (middle, high) if fits_at(middle) else (low, middle - 1)
        return low

    found = []
    layers = largest(lambda k: estimate(model, gpu_layers=k, **common).fits, 0, n)
    if layers is not None:
        found.append(estimate(model, gpu_layers=layers, **common))
    if llms.as_config(model).is_moe:
        on_gpu = largest(lambda k: estimate(model, cpu_moe_layers=n - k, **common).fits, 0, n)
        if on_gpu is not None and on_gpu < n:
            found.append(estimate(model, cpu_moe_layers=n - on_gpu, **common))
    unique = {(e.gpu_layers, e.cpu_moe_layers): e for e in found}
    return tuple(sorted(unique.values(), key=lambda e: -e.decode_bound_tokens_per_s))
