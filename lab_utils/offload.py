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
and KV cache at HBM bandwidth, or its FLOPs at its peak: :func:`serving.step_bound_s`), plus
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

from dataclasses import dataclass

from lab_utils import assumptions, checks, engines, hardware, interconnects, llms, memory, serving, units

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
    or of one of ``serving.PRECISIONS`` (``memory.BYTES_PER_VALUE``).

    >>> bytes_per_weight("q4_0"), bytes_per_weight("bf16")
    (0.5625, 2)
    """
    checks.choice("precision", precision, serving.PRECISIONS + GGUF_FORMATS)
    if precision in GGUF_FORMATS:
        return assumptions.value("weight_format_bits")[precision] / 8
    return memory.BYTES_PER_VALUE[precision]


@dataclass(frozen=True)
class _Block:
    """One transformer block as the placement sees it: the parameters that go wherever the block
    goes (attention, norms, dense MLP or router and shared experts), and its routed experts."""

    resident_params: int
    expert_params: int  # one routed expert
    n_experts: int
    top_k: int

    @property
    def routed_params(self) -> int:
        return self.n_experts * self.expert_params


def _blocks(config: llms.LLMConfig) -> tuple[tuple[_Block, ...], int]:
    """(the blocks in order, the parameters of the embedding and head together). From the
    per-layer shapes (``config.layers``, issue 35); a dense catalog model without them splits
    its count evenly over its blocks."""
    layers = getattr(config, "layers", None)
    if layers:
        blocks = tuple(
            _Block(
                layer.attention_params + layer.shared_mlp_params,
                layer.expert_params,
                layer.mlp.n_experts,
                layer.mlp.top_k,
            )
            for layer in layers
        )
        return blocks, config.embedding_params + config.head_params
    if config.n_active_params or not (config.vocab_size and config.hidden):
        raise ValueError(
            f"model={config.name!r}: its layers are not in the catalog, so it cannot be split between "
            f"a GPU and a host"
        )
    # Until every model carries its layers: embedding, final norm and (untied) head, then the rest.
    ends = config.vocab_size * config.hidden * (1 if config.tied_embeddings else 2) + config.hidden
    ends += (config.max_positions or 0) * config.hidden if config.family == "gpt2" else 0
    per_block, rest = divmod(config.n_params - ends, config.n_layers)
    return (_Block(per_block, 0, 0, 0),) * config.n_layers, ends + rest


def _experts_read(block: _Block, batch: int) -> float:
    """Routed experts a decode step of ``batch`` tokens reads in one block, in expectation under
    uniform routing: E (1 - (1 - k/E)^batch); k at batch 1."""
    if not block.n_experts:
        return 0.0
    return block.n_experts * (1 - (1 - block.top_k / block.n_experts) ** batch)


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
    link_bytes_per_s: float
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


def _link(gpu: hardware.Spec, link_bytes_per_s) -> float:
    if link_bytes_per_s is not None:
        return checks.number("link_bytes_per_s", link_bytes_per_s)
    try:
        return interconnects.get(gpu.name).pcie_bytes_per_s_each_way
    except ValueError as error:
        raise ValueError(
            f"gpu={gpu.name!r} has no PCIe link in the catalog: give link_bytes_per_s"
        ) from error


def _placement(config, blocks, gpu_layers, cpu_moe_layers, experts_on_host, stream_bytes):
    """Checked (gpu_layers, cpu_moe_layers, stream) and the placement in words."""
    n = len(blocks)
    moe = any(b.n_experts for b in blocks)
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
    if stream_bytes is not None:
        words = f"{units.format_bytes(stream_bytes)} of weights streamed over PCIe each step"
    elif gpu_layers == n and not cpu_moe_layers:
        words = "all on the GPU"
    else:
        words = f"{gpu_layers} of {n} layers on the GPU"
        if cpu_moe_layers:
            words += (
                f", experts of {'every layer' if cpu_moe_layers == n else f'{cpu_moe_layers} layers'} in RAM"
            )
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
    gpu_spec, host_spec = _device(gpu, "gpu", "gpu"), _device(host, "cpu", "host")
    blocks, ends = _blocks(config)
    gpu_layers, cpu_moe, words = _placement(
        config, blocks, gpu_layers, cpu_moe_layers, experts_on_host, stream_bytes
    )
    batch = checks.count("batch", batch)
    taken = {"activation_bytes_per_value": assumptions.value("activation_bytes_per_value")}
    if context_len is None or prompt_len is None:
        taken["input_tokens"] = assumptions.value("input_tokens")
    context_len = checks.count(
        "context_len", taken.get("input_tokens", context_len) if context_len is None else context_len
    )
    prompt_len = checks.count(
        "prompt_len", taken.get("input_tokens", prompt_len) if prompt_len is None else prompt_len
    )
    name = precision
    if precision is None:
        taken["precision.inference"] = assumptions.precision_for("inference")
    if precision in GGUF_FORMATS:
        name = _SERVED_AS[precision]
        if weight_bytes_per_param is None:
            weight_bytes_per_param = bytes_per_weight(precision)
            taken["weight_format_bits"] = assumptions.value("weight_format_bits")[precision]
    on_gpu = serving.resolve_precision(name, device=gpu_spec, weight_bytes_per_param=weight_bytes_per_param)
    on_host = serving.resolve_precision(name, device=host_spec, weight_bytes_per_param=weight_bytes_per_param)
    w = on_gpu.weight_bytes_per_param
    link = _link(gpu_spec, link_bytes_per_s)
    kv_per_layer = serving.kv_bytes_per_sequence(config, context_len=context_len) / len(blocks)
    activation = config.hidden * taken["activation_bytes_per_value"] * batch

    n = len(blocks)
    first_gpu = n - gpu_layers
    ends_on_gpu = gpu_layers == n
    # Per device: parameters held, parameters read by one decode step, FLOPs, layers of KV cache.
    held = {"gpu": 0.0, "host": 0.0}
    read = {"gpu": 0.0, "host": 0.0}
    active = {"gpu": 0.0, "host": 0.0}
    kv_layers = {"gpu": 0, "host": 0}
    crossings = 0
    for i, block in enumerate(blocks):
        where = "gpu" if i >= first_gpu else "host"
        experts = "host" if i < cpu_moe else where
        held[where] += block.resident_params
        held[experts] += block.routed_params
        read[where] += block.resident_params
        read[experts] += _experts_read(block, batch) * block.expert_params
        active[where] += block.resident_params
        active[experts] += block.top_k * block.expert_params
        kv_layers[where] += 1
        crossings += 2 if experts != where and block.n_experts else 0
    ends_at = "gpu" if ends_on_gpu else "host"
    for part in (held, read, active):
        part[ends_at] += ends
    crossings += 2 if 0 < gpu_layers < n else 0

    stream = 0.0
    if stream_bytes is not None:
        stream = checks.number("stream_bytes", stream_bytes, maximum=held["gpu"] * w)
    served = {"gpu": (gpu_spec, on_gpu), "host": (host_spec, on_host)}

    def step_s(where: str) -> float:
        spec, precision_there = served[where]
        if not read[where]:
            return 0.0
        return serving.step_bound_s(
            flops=2 * active[where] * batch,
            bytes_read=read[where] * w
            - (stream if where == "gpu" else 0.0)
            + kv_layers[where] * kv_per_layer * batch,
            peak_flops=spec.peak_flops[precision_there.compute_dtype],
            bandwidth_bytes_per_s=spec.bandwidth_bytes_per_s,
        )

    gpu_s, host_s = step_s("gpu"), step_s("host")
    link_s = (crossings * activation + stream) / link
    decode_bound_s = gpu_s + host_s + link_s
    prefill_s, path = _prefill_s(
        config, held, active, kv_layers, w, stream, link, served, batch * prompt_len, prompt_len, batch
    )
    if engine is None and (stream_bytes is None and held["host"]):
        engine = taken["offload_engine"] = assumptions.value("offload_engine")  # llama.cpp's splits
    times = engines.apply(
        engine,
        device=gpu_spec,
        weight_bytes_per_param=w,
        prefill_s=prefill_s,
        batch_prefill_s=prefill_s,
        decode_step_s=decode_bound_s,
    )
    gpu_bytes = held["gpu"] * w - stream + kv_layers["gpu"] * kv_per_layer * batch
    host_bytes = held["host"] * w + stream + kv_layers["host"] * kv_per_layer * batch
    host_memory = host_spec.memory_bytes if host_memory_bytes is None else host_memory_bytes
    host_memory = checks.number("host_memory_bytes", host_memory)
    return OffloadEstimate(
        model=config.name,
        gpu=gpu_spec.name,
        host=host_spec.name,
        placement=words,
        precision=precision or on_gpu.name,
        weight_bytes_per_param=w,
        gpu_layers=gpu_layers,
        n_layers=n,
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


def _prefill_s(config, held, active, kv_layers, w, stream, link, served, tokens, prompt_len, batch):
    """Seconds to prefill ``tokens`` at least, and how the host's weights take part. FLOPs per
    device: 2 x active parameters per token plus causal attention in the layers it holds (as
    ``serving.prefill_s`` counts it); the GPU never faster than one read of its weights."""
    width = config.n_heads * config.head_dim if config.n_heads else config.hidden
    attention = {where: 2 * layers * prompt_len**2 * width * batch for where, layers in kv_layers.items()}
    flops = {where: 2 * active[where] * tokens + attention[where] for where in active}
    (gpu_spec, gpu_precision), (host_spec, host_precision) = served["gpu"], served["host"]
    gpu_peak = gpu_spec.peak_flops[gpu_precision.compute_dtype]
    gpu_s = (
        serving.step_bound_s(
            flops=flops["gpu"],
            bytes_read=held["gpu"] * w - stream,
            peak_flops=gpu_peak,
            bandwidth_bytes_per_s=gpu_spec.bandwidth_bytes_per_s,
        )
        + stream / link
    )
    if not held["host"] or held["host"] == stream / w:
        return gpu_s, "none on the host"
    copied_s = max(held["host"] * w / link, flops["host"] / gpu_peak)
    computed_s = serving.step_bound_s(
        flops=flops["host"],
        bytes_read=held["host"] * w,
        peak_flops=host_spec.peak_flops[host_precision.compute_dtype],
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
    if any(block.n_experts for block in _blocks(llms.as_config(model))[0]):
        on_gpu = largest(lambda k: estimate(model, cpu_moe_layers=n - k, **common).fits, 0, n)
        if on_gpu is not None and on_gpu < n:
            found.append(estimate(model, cpu_moe_layers=n - on_gpu, **common))
    unique = {(e.gpu_layers, e.cpu_moe_layers): e for e in found}
    return tuple(sorted(unique.values(), key=lambda e: -e.decode_bound_tokens_per_s))
