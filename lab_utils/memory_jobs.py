"""A whole job's memory on one GPU, part by part (:func:`job_estimate`: inference, full fine-tune,
LoRA, QLoRA, with DeepSpeed's offloads) and the parts a checkpoint's weights and a parameter count
give. Part of ``lab_utils.memory``, which names all of it."""

from __future__ import annotations

from dataclasses import dataclass

from lab_utils import assumptions, basics, checks, llms
from lab_utils.basics import BYTES_PER_VALUE, weight_bytes
from lab_utils.memory_llm import (
    ATTENTION,
    LOSS_IMPLS,
    _saved_log_probs_bytes,
    attention_linears,
    llm_activation_bytes,
    lora_params,
    loss_bytes,
)
from lab_utils.memory_training import (
    OFFLOADS,
    RECOMPUTE,
    TRAINING_PRECISIONS,
    _largest_module_params,
    training_state_bytes,
    training_state_parts,
)

JOB_METHODS = assumptions.METHODS


@dataclass(frozen=True)
class JobEstimate:
    """The memory one job needs on one GPU, part by part, in bytes.

    ``parts`` is a tuple of (label, bytes) in drawing order; ``left_out`` names the parts the
    data cannot estimate for this model (then ``total_bytes`` is a lower bound);
    ``assumptions``: (name, value) of each default taken from ``lab_utils.assumptions``;
    ``attention``: the kernel the activations assume (:data:`ATTENTION`); ``loss_impl``: how
    the loss is computed (:data:`LOSS_IMPLS`; None for inference).
    """

    model: str
    method: str
    precision: str
    batch: int
    seq_len: int
    parts: tuple[tuple[str, float], ...]
    left_out: tuple[str, ...] = ()
    recompute: str = "none"
    assumptions: tuple[tuple[str, object], ...] = ()
    attention: str = "sdpa"
    loss_impl: str | None = None
    offload: str | None = None  # one of OFFLOADS: what went to the host's RAM
    host_parts: tuple[tuple[str, float], ...] = ()  # (label, bytes) in the host's RAM

    @property
    def total_bytes(self) -> float:
        """Sum of the parts on the GPU, in bytes."""
        return sum(value for _, value in self.parts)

    @property
    def gpu_bytes(self) -> float:
        """Bytes on the GPU (``total_bytes``): all of them unless ``offload`` moved some."""
        return self.total_bytes

    @property
    def host_bytes(self) -> float:
        """Bytes in the host's RAM (``offload``): 0.0 without one."""
        return sum(value for _, value in self.host_parts)

    def part(self, label: str) -> float:
        """The bytes of one part by its label, 0.0 when the job has no such part."""
        return dict(self.parts).get(label, 0.0)


def _precisions_for(method: str) -> tuple[str, ...]:
    if method == "inference":
        return ("checkpoint", *BYTES_PER_VALUE)
    if method == "full":
        return TRAINING_PRECISIONS
    if method == "lora":
        return ("bf16", "fp16", "int8")
    return ("int4",)  # qlora: NF4 weights


def precisions_for(method: str) -> tuple[str, ...]:
    """The ``precision`` values :func:`job_estimate` accepts for ``method``."""
    return _precisions_for(checks.choice("method", method, JOB_METHODS))


def _block_linear_params(config: llms.LLMConfig) -> int:
    """Parameters in the blocks' linear weights (attention projections, MLPs, every expert, no
    bias, norm or router): what bitsandbytes quantises."""
    if config.family == "gpt2":
        return config.n_layers * sum(n_in * n_out for _, n_in, n_out, _ in llms.linear_shapes(config))
    h, total = config.hidden, 0
    for layer in config.layers:
        total += sum(n_in * n_out for _, n_in, n_out in attention_linears(layer.attention, h))
        mlp = layer.mlp
        experts = mlp.n_experts * mlp.intermediate if mlp.kind == "moe" else mlp.intermediate
        total += 3 * h * (experts + mlp.shared_intermediate)  # gate, up and down of each
    return total


def _frozen_weights(config: llms.LLMConfig, precision: str, constant_bits: float) -> list[tuple[str, float]]:
    """The frozen base weights of a LoRA or QLoRA job as bitsandbytes lays them out: the blocks'
    linear weights quantised (int8, or NF4 with ``constant_bits`` of constants per weight; a
    mixture of experts' experts too), embeddings, LM head, norms, routers and biases in bf16."""
    if precision in ("bf16", "fp16") or not config.layers:
        return [("weights", weight_bytes(config.n_params, precision))]
    quantised = _block_linear_params(config)
    label = "NF4" if precision == "int4" else precision
    parts = [
        (f"weights ({label}: block linears)", weight_bytes(quantised, precision)),
        ("weights (bf16: embeddings, head, norms)", weight_bytes(config.n_params - quantised, "bf16")),
    ]
    if precision == "int4":
        parts.append(("quantisation constants", quantised * constant_bits / 8))
    return parts


def checkpoint_weight_bytes(model) -> float:
    """Bytes of ``model``'s weights as published (``llms.Checkpoint``: block FP8, MXFP4 experts
    beside bf16, int4 with its scales; bf16 when the config names no quantization)."""
    config = llms.as_config(model)
    checkpoint = config.checkpoint
    if checkpoint is None:
        return weight_bytes(config.n_params, "bf16")
    return basics.held_weight_bytes(
        config,
        weight_bytes_per_param=checkpoint.other_bytes_per_param,
        expert_bytes_per_param=checkpoint.expert_bytes_per_param,
    )


def kv_layout(model) -> str:
    """Which KV-cache layout the answers size for ``model``, in words: vLLM's, per layer kind
    (K and V per KV head for full attention; at most the window for sliding-window layers;
    MLA's compressed latent, kv_lora_rank + qk_rope_head_dim values per token)."""
    config = llms.as_config(model)
    kinds = {}
    for layer in config.layers:
        a = layer.attention
        if a.kind == "mla":
            key = f"MLA latent ({a.kv_lora_rank} + {a.qk_rope_head_dim} values per token)"
        elif a.kind == "sliding":
            key = f"sliding window of {a.window} tokens ({a.kv_values_per_token} values per token)"
        else:
            key = f"full attention ({a.kv_values_per_token} values per token)"
        kinds[key] = kinds.get(key, 0) + 1
    layers = ", ".join(f"{n} x {kind}" for kind, n in kinds.items())
    return f"vLLM's per layer: {layers}"


def job_estimate(
    model,
    method: str = "inference",
    precision: str | None = None,
    batch: int | None = None,
    seq_len: int | None = None,
    recompute: str | None = None,
    lora_rank: int | None = None,
    attention: str | None = None,
    lora_targets: str | None = None,
    loss_impl: str | None = None,
    offload: str | None = None,
) -> JobEstimate:
    """Memory for one job on a public model (``llms.get`` name or LLMConfig), in bytes.

    method "inference": weights in ``precision`` ("checkpoint", the default: as published,
    :func:`checkpoint_weight_bytes`) plus the KV cache of ``batch`` sequences of ``seq_len``
    tokens as vLLM lays it out per layer (:func:`kv_layout`; ``kv_bytes_per_value`` each).
    "full": :func:`training_state_bytes` with Adam
    in ``precision`` (see :data:`TRAINING_PRECISIONS`: "mixed" Megatron-style, "autocast" fp32
    weights with bf16 copies, "fp32", "bf16") plus activations. "lora": frozen weights in
    ``precision`` plus adapters (:func:`lora_params` on ``lora_targets``) kept in fp32 as peft
    does, with fp32 gradients and Adam moments (16 bytes each), plus activations. "qlora": the
    same on bitsandbytes' layout: the blocks' linear weights in NF4 with their quantisation
    constants, embeddings, LM head and norms in bf16.
    Activations: :func:`llm_activation_bytes` with ``attention`` and ``recompute``, 16-bit
    values (fp32 for precision "fp32"), less the log-probabilities the loss saves; the loss
    then has a part of its own, what it holds at its peak (:func:`loss_bytes` with
    ``loss_impl``). The parts add up to the peak of a step; with full recomputation that
    counts the one block recomputed in backward and the loss's peak together, though they come
    one after the other (a block's activations are a few percent of the hf loss's peak).
    A mixture of experts holds every expert (weights, and for "full" their gradients and
    optimizer states). A model without layers in the catalog has its activations and adapters
    listed in ``left_out``. Left None, ``precision`` is the method's,
    ``recompute`` the fine-tuning assumption (gradient checkpointing), ``attention`` the
    ``attention`` assumption (SDPA), ``loss_impl`` the ``loss_impl`` assumption (the Hugging
    Face path), and ``batch``, ``seq_len``, ``lora_rank`` and ``lora_targets`` the
    assumptions of those names, all from ``lab_utils.assumptions``. ``offload`` (one of
    :data:`OFFLOADS`, training only) moves state to the host's RAM as DeepSpeed places it:
    those parts go to ``host_parts``, and ``parts`` keep what stays on the GPU.
    """
    model = llms.as_config(model)
    checks.choice("method", method, JOB_METHODS)
    training = method != "inference"
    adapted = method in ("lora", "qlora") and bool(model.layers)
    wanted = [(f"precision.{method}", precision), ("batch", batch), ("seq_len", seq_len)]
    if training:
        wanted += [("recompute_fine_tune", recompute), ("attention", attention), ("loss_impl", loss_impl)]
    if adapted:
        wanted += [("lora_rank", lora_rank), ("lora_targets", lora_targets)]
    taken = {name: assumptions.value(name) for name, given in wanted if given is None}
    precision = taken.get(f"precision.{method}", precision)
    batch, seq_len = taken.get("batch", batch), taken.get("seq_len", seq_len)
    recompute = taken.get("recompute_fine_tune", recompute) if training else "none"
    attention = taken.get("attention", attention) if training else "sdpa"
    loss_impl = taken.get("loss_impl", loss_impl) if training else None
    lora_rank, lora_targets = taken.get("lora_rank", lora_rank), taken.get("lora_targets", lora_targets)
    checks.choice("precision", precision, _precisions_for(method))
    batch = checks.count("batch", batch)
    seq_len = checks.count("seq_len", seq_len)
    checks.choice("recompute", recompute, RECOMPUTE)
    checks.choice("attention", attention, ATTENTION)
    if training:
        checks.choice("loss_impl", loss_impl, LOSS_IMPLS)
    parts, left_out = [], []
    if method == "inference":
        if precision == "checkpoint":
            published = "bf16" if model.checkpoint is None else model.checkpoint.format
            if "precision.inference" in taken:
                taken["precision.inference"] = f"checkpoint ({published})"
            parts.append(("weights", checkpoint_weight_bytes(model)))
        else:
            parts.append(("weights", weight_bytes(model.n_params, precision)))
        if model.layers:
            kv = assumptions.value("kv_bytes_per_value")
            taken["kv_bytes_per_value"], taken["kv_layout"] = kv, kv_layout(model)
            values = basics.kv_values_per_sequence(model.layers, seq_len)
            parts.append(("KV cache", float(batch * kv * values)))
        else:
            left_out.append("KV cache")
    else:
        if method == "full":
            parts += training_state_parts(model.n_params, precision)
        else:
            if precision == "int4" and model.layers:
                taken["nf4_constant_bits_per_weight"] = assumptions.value("nf4_constant_bits_per_weight")
            parts += _frozen_weights(model, precision, taken.get("nf4_constant_bits_per_weight", 0.0))
            if adapted:
                adapters = training_state_bytes(lora_params(model, lora_rank, lora_targets), precision="fp32")
                parts += [
                    ("adapters", adapters.params_bytes),
                    ("gradients", adapters.grads_bytes),
                    ("optimizer states", adapters.optimizer_states_bytes),
                ]
            else:
                left_out.append("adapters")
        if model.layers:
            value = 4 if precision == "fp32" else 2
            saved = llm_activation_bytes(
                model,
                seq_len=seq_len,
                batch=batch,
                recompute=recompute,
                attention=attention,
                bytes_per_value=value,
            )
            if loss_impl == "chunked":
                taken["loss_chunks"] = assumptions.value("loss_chunks")
            parts += [
                ("activations", saved - _saved_log_probs_bytes(model, batch * seq_len)),
                (
                    f"loss at its peak ({loss_impl})",
                    loss_bytes(
                        model,
                        seq_len=seq_len,
                        batch=batch,
                        loss_impl=loss_impl,
                        bytes_per_value=value,
                        loss_chunks=taken.get("loss_chunks"),
                    ),
                ),
            ]
        else:
            left_out += ["activations", "loss"]
    host_parts = []
    if offload is not None:
        parts, host_parts = _offloaded(model, method, parts, offload)
    return JobEstimate(
        model=model.name,
        method=method,
        precision=precision,
        batch=batch,
        seq_len=seq_len,
        parts=tuple(parts),
        offload=offload,
        host_parts=tuple(host_parts),
        left_out=tuple(left_out),
        recompute=recompute,
        assumptions=tuple(taken.items()),
        attention=attention,
        loss_impl=loss_impl,
    )


def _offloaded(config: llms.LLMConfig, method: str, parts: list, offload: str) -> tuple[list, list]:
    """(GPU parts, host parts) of a training job's ``parts`` with ``offload`` (:data:`OFFLOADS`)."""
    checks.choice("offload", offload, OFFLOADS)
    if method == "inference":
        raise ValueError(
            "offload: DeepSpeed's offloads are for training; a served model split between the GPU "
            "and the host is lab_utils.offload"
        )
    if offload == "optimizer+params" and method != "full":
        raise ValueError(
            f"offload={offload!r}: the weights go to the host in a full fine-tune (method 'full')"
        )
    moved = {"gradients", "optimizer states"} | ({"weights"} if offload == "optimizer+params" else set())
    gpu = [(label, value) for label, value in parts if label not in moved]
    host = [(label, value) for label, value in parts if label in moved]
    if offload == "optimizer+params":
        gpu.insert(
            0, ("gathered module (16-bit weights and gradients)", 4.0 * _largest_module_params(config))
        )
    return gpu, host


def param_count_parts(n_params, method: str, precision: str | None = None) -> tuple[tuple[str, float], ...]:
    """What a bare parameter count tells of a job's memory, part by part (bytes): the weights in
    ``precision`` (default the method's), and for "full" the gradients and optimizer state
    (:func:`training_state_parts`). Adapters, activations and the KV cache need the model's shape
    (:func:`job_estimate`): the total is a lower bound. A bare count has no checkpoint to read:
    "checkpoint" (the inference default) counts its weights in bf16, as most are published."""
    checks.choice("method", method, JOB_METHODS)
    precision = assumptions.resolve(**{f"precision__{method}": precision})[0][f"precision.{method}"]
    checks.choice("precision", precision, _precisions_for(method))
    if precision == "checkpoint":
        precision = "bf16"
    if method == "full":
        return tuple(training_state_parts(n_params, precision))
    return (("weights", weight_bytes(n_params, precision)),)
