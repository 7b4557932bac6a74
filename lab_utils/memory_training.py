"""Memory of training on any model: the weights, gradients and optimizer state of a training job
(ZeRO's accounting, Rajbhandari et al., arXiv 1910.02054) and what a transformer layer keeps for
its backward pass (Korthikanti et al., arXiv 2205.05198; :func:`tiny_gpt_activation_bytes` for
``lab_utils.models.TinyGPT``). Part of ``lab_utils.memory``, which names all of it."""

from __future__ import annotations

from dataclasses import dataclass

from lab_utils import basics, checks, llms
from lab_utils.basics import weight_bytes

TRAINING_PRECISIONS = ("mixed", "fp32", "bf16", "autocast")
"""The layouts of a training job's state, bytes per parameter with Adam:

- mixed: Megatron-style (ZeRO's accounting): bf16/fp16 weights (2) and gradients (2), with an
  fp32 master copy and fp32 moments in the optimizer (12): 16.
- autocast: ``torch.autocast`` around an fp32 model: fp32 weights (4), gradients (4) and
  moments (8), 16; matrix products run in bf16 on copies of the weights that autocast caches
  and backward keeps, 2 more (:func:`job_estimate` shows them as their own part).
- fp32: everything in fp32 (16); bf16: everything, optimizer state included, in bf16 (8)."""

OPTIMIZERS = {"adamw": 2, "adam": 2, "sgd_momentum": 1, "sgd": 0}
"""State tensors each optimizer keeps per parameter (Adam: first and second moments)."""

RECOMPUTE = ("none", "selective", "full")

OFFLOADS = ("optimizer", "optimizer+params")
"""Where DeepSpeed puts a training job's state beside the GPU (:func:`job_estimate`'s ``offload``):

- "optimizer", ZeRO-Offload (Ren et al., USENIX ATC 2021, arXiv 2101.06840): the gradients and
  the optimizer states (fp32 master weights and moments) in the host's RAM, where the CPU runs
  Adam; the GPU keeps the 16-bit weights and the activations.
- "optimizer+params", ZeRO-Infinity offloading to the CPU (Rajbhandari et al., SC21, arXiv
  2104.07857): the 16-bit weights too, fetched module by module; the GPU keeps the largest
  module gathered (its 16-bit weights and gradients, as DeepSpeed reserves it) and the activations."""


# --- training state ------------------------------------------------------------------------


@dataclass(frozen=True)
class TrainingState:
    """Bytes per device for the weights, gradients and optimizer state of one training job.

    ``optimizer_states_bytes`` holds everything the optimizer keeps: for mixed precision the
    fp32 master weights and the Adam moments (ZeRO's K = 12 bytes per parameter).
    """

    params_bytes: float
    grads_bytes: float
    optimizer_states_bytes: float

    @property
    def total_bytes(self) -> float:
        """params + grads + optimizer states, in bytes."""
        return self.params_bytes + self.grads_bytes + self.optimizer_states_bytes


def _state_bytes_per_param(precision: str, optimizer: str) -> tuple[float, float, float]:
    """(weights, gradients, optimizer state) bytes per parameter, before any sharding."""
    moments = OPTIMIZERS[optimizer]
    if precision == "mixed":
        return 2, 2, 4 + 4 * moments  # fp32 master copy + fp32 moments
    value = (
        4 if precision == "autocast" else basics.bytes_per_value(precision)
    )  # moments stored like the weights
    return value, value, value * moments


def training_state_bytes(
    n_params,
    precision: str = "mixed",
    optimizer: str = "adamw",
    zero_stage: int = 0,
    data_parallel: int = 1,
    fp32_grad_accum: bool = False,
) -> TrainingState:
    """Weights, gradients and optimizer state per device, in bytes (activations not included).

    ZeRO accounting (Rajbhandari et al., arXiv 1910.02054, Fig. 1): mixed-precision Adam keeps
    2Ψ (weights) + 2Ψ (gradients) + KΨ (K = 12: fp32 master, momentum, variance). Stage 1
    divides the optimizer state by ``data_parallel`` (N_d), stage 2 the gradients too, stage 3
    the weights too. ``fp32_grad_accum`` adds an fp32 gradient buffer (4 bytes per parameter,
    Ultra-Scale Playbook), sharded with the gradients. ``precision``: one of
    :data:`TRAINING_PRECISIONS` (autocast's weight copies are not state: see :func:`job_estimate`).

    Stage 3 against DeepSpeed's own estimator (``estimate_zero3_model_states_mem_needs``):
    it counts 18 bytes per parameter over N, not 16, because its implementation also keeps
    fp32 gradients (2 + 4 bytes of gradients, 4 of fp32 weights, 8 of moments), and adds 4
    bytes per parameter of the largest single module (its 16-bit weights and gradients,
    gathered whole while it runs: Llama-3.1-8B's 525M-parameter embedding, 2.1 GB). This
    function keeps the paper's 16 (the state ZeRO partitions) and leaves out that transient
    buffer; for Llama-3.1-70B over 8 GPUs DeepSpeed's figure is 17.6 + 4.2 GB higher.
    """
    n_params = checks.number("n_params", n_params)
    checks.choice("precision", precision, TRAINING_PRECISIONS)
    checks.choice("optimizer", optimizer, OPTIMIZERS)
    zero_stage = checks.count("zero_stage", zero_stage, minimum=0)
    if zero_stage > 3:
        raise ValueError(f"zero_stage={zero_stage!r}: ZeRO has stages 0 (off), 1, 2 and 3")
    data_parallel = checks.count("data_parallel", data_parallel)
    if not isinstance(fp32_grad_accum, bool):
        raise TypeError(f"fp32_grad_accum must be True or False, got {fp32_grad_accum!r}")
    params, grads, states = _state_bytes_per_param(precision, optimizer)
    if fp32_grad_accum:
        grads += 4
    shard = 1 / data_parallel
    return TrainingState(
        params_bytes=n_params * params * (shard if zero_stage >= 3 else 1),
        grads_bytes=n_params * grads * (shard if zero_stage >= 2 else 1),
        optimizer_states_bytes=n_params * states * (shard if zero_stage >= 1 else 1),
    )


def zero3_bytes_per_gpu(model, n_gpus: int) -> float:
    """Bytes of model state per GPU when ``n_gpus`` shard a full fine-tune of ``model`` (an
    ``llms`` name or LLMConfig) with ZeRO stage 3, by DeepSpeed's own estimator
    (``estimate_zero3_model_states_mem_needs``): 18 bytes per parameter over the GPUs, plus 4
    bytes per parameter of the largest module, gathered whole while it runs (the embedding or
    LM head, vocabulary x hidden). The course plans with this figure, larger than ZeRO's 16
    (:func:`training_state_bytes`): it is what the library reserves. Llama-3.1-70B on 16 GPUs:
    79.4 + 4.2 GB."""
    config = llms.as_config(model)
    n_gpus = checks.count("n_gpus", n_gpus)
    return 18 * config.n_params / n_gpus + 4 * _largest_module_params(config)


def _largest_module_params(config: llms.LLMConfig) -> int:
    """Parameters of the largest module DeepSpeed gathers whole: the embedding (vocab x hidden)."""
    return config.vocab_size * config.hidden if config.vocab_size else 0


def training_state_parts(n_params, precision: str = "mixed") -> list[tuple[str, float]]:
    """(label, bytes) of a full fine-tune's state with Adam: weights, gradients, optimizer
    states (:func:`training_state_bytes`), and for "autocast" the bf16 weight copies autocast
    caches and backward keeps (2 bytes per parameter)."""
    state = training_state_bytes(n_params, precision=precision)
    parts = [
        ("weights", state.params_bytes),
        ("gradients", state.grads_bytes),
        ("optimizer states", state.optimizer_states_bytes),
    ]
    if precision == "autocast":
        parts.append(("bf16 weight copies (autocast)", weight_bytes(n_params, "bf16")))
    return parts


def accelerate_training_bytes(n_params, dtype: str = "float16") -> float:
    """What Hugging Face accelerate's ``estimate-memory`` prints as "Training using Adam", bytes.

    Reproduces ``estimate_training_usage`` in accelerate/commands/estimate.py: of the model,
    gradients, optimizer and step sizes it reports the *largest*, not their sum: 8 bytes per
    parameter for "float16" (mixed precision), 16 for "float32". Activations are left out.
    """
    n_params = checks.number("n_params", n_params)
    checks.choice("dtype", dtype, ("float32", "float16"))
    fp32 = 4 * n_params
    if dtype == "float32":
        sizes = {"model": fp32, "gradients": fp32, "optimizer": 2 * fp32, "step": 4 * fp32}
    else:
        sizes = {"model": fp32, "gradients": 1.5 * fp32, "optimizer": 2 * fp32, "step": 2 * fp32}
    return max(sizes.values())


# --- activations and KV cache --------------------------------------------------------------


def activation_bytes(*, n_layers, hidden, n_heads, seq_len, batch, recompute: str = "none") -> float:
    """Bytes the transformer layers keep for the backward pass, 16-bit training.

    Korthikanti et al., arXiv 2205.05198, per layer: s·b·h·(34 + 5·a·s/h) with no
    recomputation, 34·s·b·h with selective recomputation of the attention core, 2·s·b·h
    (the layer input) with full recomputation. Transformer layers only: embeddings, the output
    layer and the loss are not counted. Assumes Megatron's GPT layer (4h MLP, multi-head
    attention, dropout, unfused attention keeping the s x s scores): the paper's figures. For
    a ``transformers`` model as fine-tuned today use :func:`llm_activation_bytes`.
    """
    n_layers, hidden, n_heads, seq_len, batch = (
        checks.count(name, value)
        for name, value in (
            ("n_layers", n_layers),
            ("hidden", hidden),
            ("n_heads", n_heads),
            ("seq_len", seq_len),
            ("batch", batch),
        )
    )
    checks.choice("recompute", recompute, RECOMPUTE)
    sbh = seq_len * batch * hidden
    if recompute == "full":
        per_layer = 2 * sbh
    elif recompute == "selective":
        per_layer = 34 * sbh
    else:
        per_layer = 34 * sbh + 5 * n_heads * seq_len * seq_len * batch
    return float(n_layers * per_layer)


def tiny_gpt_activation_bytes(config, batch: int, bytes_per_value: float = 4) -> float:
    """Bytes ``lab_utils.models.TinyGPT(config)`` saves for backward in one step, predicted.

    Counted from the model's code, values of ``bytes_per_value`` bytes each (4 for fp32), with
    s = config.seq_len, b = batch, h = hidden, a = n_heads, per block:
    16·s·b·h values (the two LayerNorm inputs and outputs, 4; query, key and value, 3; the
    attention output before its projection, 1; the MLP's GELU input and output, 4h each, 8)
    plus a·s²·b (the softmax output), and 2·s·b·h for the final LayerNorm. The default loss
    (the sum of the logits) saves nothing.

    Where it differs from Korthikanti's 16-bit Megatron count (:func:`activation_bytes`): no
    dropout, so no dropout masks (2·s·b·h bytes) and no dropped-out softmax copy and its mask
    (3·a·s²·b bytes); values in the model's own dtype rather than 2 bytes; and it leaves out
    the small tensors a measurement also sees: the LayerNorm statistics (4·s·b values per
    block), the boolean causal mask (s² bytes per block) and the position ids. At 2 bytes per
    value the per-block count equals Korthikanti's without dropout: 32·s·b·h + 2·a·s²·b.
    """
    for name in ("n_layers", "hidden", "n_heads", "seq_len"):
        if not isinstance(getattr(config, name, None), int):
            raise TypeError(
                f"config must have integer n_layers, hidden, n_heads and seq_len "
                f"(a models.GPTConfig); {name} is {getattr(config, name, None)!r}"
            )
    batch = checks.count("batch", batch)
    bytes_per_value = checks.number("bytes_per_value", bytes_per_value)
    s, h, a = config.seq_len, config.hidden, config.n_heads
    per_block = 16 * s * batch * h + a * s * s * batch
    final_norm = 2 * s * batch * h
    return float(bytes_per_value * (config.n_layers * per_block + final_norm))
