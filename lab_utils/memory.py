"""What fills accelerator memory: formulas for training and inference, and a measured step.

Formulas (pure arithmetic, no torch), all sizes in bytes per device:

- :func:`training_state_bytes`: weights, gradients and optimizer state, with the ZeRO paper's
  accounting (Rajbhandari et al., arXiv 1910.02054): mixed-precision Adam keeps 2 + 2 + 12
  bytes per parameter, and ZeRO stages 1-3 split the last, the last two or all three terms
  over the data-parallel ranks.
- :func:`activation_bytes`: what a transformer layer keeps for its backward pass
  (Korthikanti et al., arXiv 2205.05198); :func:`tiny_gpt_activation_bytes` is the same count
  for ``lab_utils.models.TinyGPT``; :func:`llm_activation_bytes` counts a whole GPT-2 or Llama
  model of ``transformers`` (eager or fused attention, gradient checkpointing, the logits),
  checked against the real models with ``lab_utils.llm_measure``.
- :func:`loss_bytes`: what the loss holds at its peak (the logits, their fp32 upcast and their
  gradients on the Hugging Face path; less when chunked or fused), measured on ``transformers``.
- :func:`lora_params`: adapter parameters, as ``peft`` counts them.
- :func:`kv_cache_bytes` and :func:`weight_bytes` for inference; :func:`job_estimate` adds
  them up for a model of ``lab_utils.llms`` and a job (inference, full fine-tune, LoRA, QLoRA);
  :func:`fits` and :func:`gpus_needed` compare a total with a GPU from ``lab_utils.hardware``;
  :func:`longest_seq_len` finds the longest sequence of a job that fits one GPU.

Measurements live in ``lab_utils.memory_measure`` (the measuring layer: torch, imported
lazily): ``measure_training_step`` runs one training step and reports what it held, part by
part; ``budget`` caps memory so that running out is a lesson, not a crash.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from lab_utils import assumptions, basics, checks, hardware, llms
from lab_utils.basics import BYTES_PER_VALUE, weight_bytes  # owned by basics, named here too

__all__ = [
    "ATTENTION",
    "BYTES_PER_VALUE",
    "CUDA_CONTEXT_BYTES",  # noqa: F822 - read when asked, by the module's __getattr__
    "JOB_METHODS",
    "LORA_TARGETS",
    "LOSS_IMPLS",
    "OFFLOADS",
    "RECOMPUTE",
    "TRAINING_PRECISIONS",
    "OPTIMIZERS",
    "JobEstimate",
    "LongestFit",
    "TrainingState",
    "accelerate_training_bytes",
    "activation_bytes",
    "fits",
    "gpus_needed",
    "gpus_to_hold",
    "DoesNotFit",
    "job_estimate",
    "checkpoint_weight_bytes",
    "kv_cache_bytes",
    "kv_layout",
    "llm_activation_bytes",
    "longest_seq_len",
    "PEFT_FUSED_EXPERT_TYPES",
    "attention_linears",
    "lora_params",
    "loss_bytes",
    "param_count_parts",
    "usable_bytes",
    "zero3_bytes_per_gpu",
    "tiny_gpt_activation_bytes",
    "training_state_bytes",
    "training_state_parts",
    "weight_bytes",
]


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

JOB_METHODS = assumptions.METHODS


def __getattr__(name: str):
    """``CUDA_CONTEXT_BYTES``: (low, high) bytes a GPU process holds beyond its tensors (CUDA
    context, kernels, allocator slack), the ``cuda_context_low_bytes`` and ``cuda_context_bytes``
    assumptions read when asked (an edit of assumptions.toml reaches it): 0.3 to 2.1 GB (300 MiB
    to 2 GiB as nvidia-smi counts) depending on the GPU and libraries (Hugging Face accelerate's
    estimate-memory documentation). :func:`fits` reserves the upper end by default."""
    if name == "CUDA_CONTEXT_BYTES":
        return (assumptions.value("cuda_context_low_bytes"), assumptions.value("cuda_context_bytes"))
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


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


ATTENTION = ("eager", "sdpa")
"""Attention kernels: "eager" (scores and softmax as tensors of s x s per head, kept for
backward) and "sdpa" (PyTorch's fused scaled_dot_product_attention, FlashAttention: the
softmax is recomputed in backward from the output and one log-sum-exp per row, no s x s)."""


def _layer_activation_bytes(
    config: llms.LLMConfig, layer, tokens: int, batch: int, seq_len: int, attention: str, value: int
) -> float:
    """Bytes one block (``layer``, an ``llms.Layer``) of ``config`` saves for backward over
    ``tokens`` = batch x seq_len."""
    h, heads = config.hidden, layer.attention.n_heads
    q, kv = heads * layer.attention.head_dim, layer.attention.n_kv_heads * layer.attention.head_dim
    scores = batch * heads * seq_len * seq_len
    if config.family == "gpt2":
        f = config.ffn_hidden
        # two LayerNorms (input, and mean and rstd in fp32 as on CUDA), the inputs of c_attn,
        # attn.c_proj and c_fc, and the GELU (tanh form: its input, tanh, 0.5x, 1 + tanh, output)
        kept = value * tokens * (2 * h + 3 * h + 5 * f) + 2 * 2 * 4 * tokens
        if attention == "sdpa":  # q, k and v in c_attn's output, one log-sum-exp per row and head
            return kept + value * tokens * 3 * h + 4 * batch * heads * seq_len
        return kept + value * tokens * 3 * q + value * scores  # q, k, v copies; the softmax output
    # Llama: two RMSNorms (fp32 upcast of the input, the normalised value, 1/rms per token),
    # the inputs of q/k/v, o_proj and gate/up, and SwiGLU's gate, SiLU(gate), up and product;
    # a mixture of experts: each token's top_k copies of its input to the experts it goes to,
    # their SwiGLU values, and the shared experts'
    mlp = layer.mlp
    if mlp.kind == "moe":
        gathered, width = mlp.top_k * h, mlp.top_k * mlp.intermediate + mlp.shared_intermediate
    else:
        gathered, width = 0, mlp.intermediate
    norms = 2 * ((max(4, value) + value) * tokens * h + 4 * tokens)
    kept = norms + value * tokens * (2 * h + q + gathered + 4 * width)
    if attention == "sdpa":  # rotated q and k, v (grouped: kv heads), log-sum-exp
        return kept + value * tokens * (q + 2 * kv) + 4 * batch * heads * seq_len
    # eager: q, and k and v repeated to every query head; softmax in fp32 and its cast back
    return kept + value * tokens * 3 * q + (4 + (value if value != 4 else 0)) * scores


def llm_activation_bytes(
    model, *, seq_len, batch=1, recompute: str = "none", attention: str | None = None, bytes_per_value=2
) -> float:
    """Bytes autograd keeps for backward in one forward pass of a whole ``transformers`` model,
    from the embedding output to the loss, logits included.

    ``model``: a catalog name or an ``llms.LLMConfig`` with its layers (GPT-2; Llama, Mistral,
    Qwen2 and Qwen3 checked; a mixture of experts' or MLA's layers counted alike with their own
    widths, each token's expert inputs and SwiGLU values top_k times), as ``transformers``
    (5.x) writes these models, dropout off (the Llama
    family has none; GPT-2's 0.1 would add its masks). ``bytes_per_value``: 2 for bf16/fp16
    training, 4 for fp32; softmax statistics, RMSNorm's upcast and the loss stay fp32.
    ``attention``: one of :data:`ATTENTION` (eager adds the s x s softmax per head and layer;
    None: the ``attention`` assumption). ``recompute`` (gradient checkpointing): "none";
    "selective", the attention core recomputed (no s x s term); "full", each block keeps only its
    input, plus one block's activations, live while its backward runs. Beyond the blocks: the
    final norm, the LM head's input, and the log-softmax of the logits in fp32 (batch x seq_len x
    vocab x 4 bytes: 2.1 GB for Llama-3.1-8B at 4,096 tokens), the labels, and the positions.
    Checked within 10% of what ``transformers`` models save (tests/test_llm_memory.py).
    """
    config = llms.as_config(model)
    if not config.layers:
        raise ValueError(
            f"model={config.name!r}: its layer shapes are not in lab_utils/data/llm_configs.toml"
        )
    seq_len, batch = checks.count("seq_len", seq_len), checks.count("batch", batch)
    checks.choice("recompute", recompute, RECOMPUTE)
    attention = assumptions.resolve(attention=attention)[0]["attention"]
    checks.choice("attention", attention, ATTENTION)
    if isinstance(bytes_per_value, bool) or bytes_per_value not in (2, 4):
        raise ValueError(
            f"bytes_per_value={bytes_per_value!r} is not allowed; use 2 (bf16, fp16) or 4 (fp32)"
        )
    value = int(bytes_per_value)
    tokens = batch * seq_len
    kernel = "sdpa" if recompute == "selective" else attention
    layers = [
        _layer_activation_bytes(config, layer, tokens, batch, seq_len, kernel, value)
        for layer in config.layers
    ]
    blocks = sum(layers)
    if recompute == "full":
        blocks = config.n_layers * value * tokens * config.hidden + max(layers)
    if config.family == "gpt2":
        norm = value * tokens * config.hidden + 2 * 4 * tokens
    else:
        norm = (max(4, value) + value) * tokens * config.hidden + 4 * tokens
    head = norm + value * tokens * config.hidden + _saved_log_probs_bytes(config, tokens) + 8 * tokens
    positions = 8 * seq_len if config.family == "gpt2" else 2 * value * seq_len * config.head_dim
    return float(blocks + head + positions)


LOSS_IMPLS = ("hf", "chunked", "fused")
"""How a causal language model's loss is computed, which decides its peak memory (:func:`loss_bytes`):
"hf", Hugging Face transformers (``ForCausalLMLoss``): the full logits, upcast to fp32, through
``cross_entropy``; "chunked", torchtune's ``CEWithChunkedOutputLoss``: the output projection and
the fp32 upcast one chunk of tokens at a time; "fused", a fused linear cross-entropy kernel
(Liger Kernel's ``LigerFusedLinearCrossEntropyLoss``): logits made and dropped a chunk at a
time, their gradient computed in the forward pass."""


def _saved_log_probs_bytes(config: llms.LLMConfig, tokens: int) -> float:
    """``cross_entropy`` keeps its fp32 log-softmax for backward: 4 bytes per logit."""
    return 4.0 * tokens * config.vocab_size


def loss_bytes(model, *, seq_len, batch=1, loss_impl: str, bytes_per_value=2, loss_chunks=None) -> float:
    """Bytes the loss of a causal language model holds at its peak, the fp32 log-probabilities
    it saves for backward included, over t = ``batch`` x ``seq_len`` tokens, vocabulary V.

    ``loss_impl`` (:data:`LOSS_IMPLS`), per token, values of ``bytes_per_value`` (2 or 4):

    - "hf": 12·V. Forward: the logits (value·V), their fp32 upcast (4·V) and the saved
      log-softmax (4·V); backward: the saved log-softmax, its gradient and the upcast's
      gradient, 4·V each, the peak (measured on ``transformers``: tests/test_llm_memory.py).
    - "chunked", n = ``loss_chunks`` chunks (None: the ``loss_chunks`` assumption): forward,
      every chunk's logits (value·V) and saved log-softmax (4·V) with one chunk's upcast (4·V/n,
      none in fp32); backward, 4·V + (8 + value)·V/n; the larger (6.5·V in bf16, n = 8).
    - "fused": no tensor of V per token outlives a chunk: the gradient of the head's input
      (value·hidden per token) and one chunk of c tokens' logits (c·V·value), c the power of two
      at or above t / ceil(V / hidden), at most t (Liger Kernel's chunking).

    Llama-3.1-8B at 4,096 tokens: "hf" 6.3 GB, "chunked" 3.4 GB, "fused" 67 MB.
    """
    config = llms.as_config(model)
    seq_len, batch = checks.count("seq_len", seq_len), checks.count("batch", batch)
    checks.choice("loss_impl", loss_impl, LOSS_IMPLS)
    if isinstance(bytes_per_value, bool) or bytes_per_value not in (2, 4):
        raise ValueError(
            f"bytes_per_value={bytes_per_value!r} is not allowed; use 2 (bf16, fp16) or 4 (fp32)"
        )
    tokens, vocab, value = batch * seq_len, config.vocab_size, int(bytes_per_value)
    log_probs = _saved_log_probs_bytes(config, tokens)
    if loss_impl == "hf":
        return 3 * log_probs
    if loss_impl == "chunked":
        n = checks.count("loss_chunks", assumptions.resolve(loss_chunks=loss_chunks)[0]["loss_chunks"])
        upcast = 4 if value < 4 else 0
        forward = tokens * vocab * (value + upcast / n) + log_probs
        backward = log_probs + tokens * vocab * (8 + value) / n
        return max(forward, backward)
    chunk = min(tokens, 2 ** math.ceil(math.log2(math.ceil(tokens / math.ceil(vocab / config.hidden)))))
    return float(value * tokens * config.hidden + value * chunk * vocab)


def kv_cache_bytes(*, n_layers, n_kv_heads, head_dim, seq_len, batch=1, bytes_per_value=2) -> float:
    """Bytes of the key/value cache: 2 (K and V) x layers x KV heads x head_dim x tokens x bytes.

    ``seq_len`` tokens for each of ``batch`` sequences. Llama-3.1-8B in bf16 (32 layers,
    8 KV heads of 128): 2·32·8·128·2 = 131,072 bytes = 131 kB per token.
    """
    n_layers, n_kv_heads, head_dim, seq_len, batch = (
        checks.count(name, value)
        for name, value in (
            ("n_layers", n_layers),
            ("n_kv_heads", n_kv_heads),
            ("head_dim", head_dim),
            ("seq_len", seq_len),
            ("batch", batch),
        )
    )
    bytes_per_value = checks.number("bytes_per_value", bytes_per_value)
    return float(2 * n_layers * n_kv_heads * head_dim * seq_len * batch * bytes_per_value)


LORA_TARGETS = ("attention", "all-linear")
"""Where :func:`lora_params` puts adapters: "attention", the attention projections (q, k, v
and o; GPT-2's fused ``c_attn`` and its ``attn.c_proj``); "all-linear", peft's
``target_modules="all-linear"``: every linear layer of every block, the LM head excepted."""


PEFT_FUSED_EXPERT_TYPES = ("mixtral", "qwen3_moe", "olmoe", "deepseek_v2", "deepseek_v3", "glm4_moe")
"""model_types whose routed experts peft (0.21, on transformers 5's fused expert tensors) adapts
under "all-linear": it maps the names of transformers 4's expert linears onto the fused
parameters, so the router gets one adapter, each expert's gate and up projections one of rank
2r together and its down projection one of rank r, while linears of those names outside the
experts (dense MLP layers, shared experts) get none. Other types (qwen2_moe, gpt_oss) adapt
their nn.Linear layers only: attention and shared experts, no routed expert."""


def attention_linears(attention, hidden: int) -> tuple[tuple[str, int, int], ...]:
    """(name, in_features, out_features) of one block's attention projections, as
    ``transformers`` names them: q, k, v and o; for MLA q (or q_a and q_b through
    q_lora_rank), kv_a (to the latent and the rotary key), kv_b (latent to keys and values) and o."""
    a = attention
    if a.kind == "mla":
        nope = a.head_dim - a.qk_rope_head_dim
        if a.q_lora_rank is None:
            query = (("q_proj", hidden, a.n_heads * a.head_dim),)
        else:
            query = (("q_a_proj", hidden, a.q_lora_rank), ("q_b_proj", a.q_lora_rank, a.n_heads * a.head_dim))
        return query + (
            ("kv_a_proj_with_mqa", hidden, a.kv_lora_rank + a.qk_rope_head_dim),
            ("kv_b_proj", a.kv_lora_rank, a.n_heads * (nope + a.v_head_dim)),
            ("o_proj", a.n_heads * a.v_head_dim, hidden),
        )
    return (
        ("q_proj", hidden, a.n_heads * a.head_dim),
        ("k_proj", hidden, a.n_kv_heads * a.head_dim),
        ("v_proj", hidden, a.n_kv_heads * a.v_head_dim),
        ("o_proj", a.n_heads * a.v_head_dim, hidden),
    )


def _mlp_adapter_params(config: llms.LLMConfig, layer, rank: int) -> int:
    """LoRA parameters peft puts on one block's MLP under "all-linear" (see
    :data:`PEFT_FUSED_EXPERT_TYPES`)."""
    h, mlp = config.hidden, layer.mlp
    fused = config.model_type in PEFT_FUSED_EXPERT_TYPES
    if mlp.kind == "dense":
        return 0 if fused else rank * 3 * (h + mlp.intermediate)  # gate and up h -> f, down f -> h
    if fused:
        e, f = mlp.n_experts, mlp.intermediate
        return rank * (h + e) + e * 2 * rank * (h + 2 * f) + e * rank * (f + h)
    shared = rank * 3 * (h + mlp.shared_intermediate) if mlp.shared_intermediate else 0
    gate = rank * (h + 1) if config.model_type == "qwen2_moe" and mlp.shared_intermediate else 0
    return shared + gate


def lora_params(model, rank: int | None = None, targets: str | None = None) -> int:
    """Trainable LoRA parameters with rank-``rank`` adapters on the ``targets`` layers, as
    ``peft`` counts them (None: the ``lora_rank`` and ``lora_targets`` assumptions, rank 16 on
    every linear layer).

    An adapter on a d_in x d_out weight adds r·(d_in + d_out) parameters (Hu et al., arXiv
    2106.09685), counted per layer as the model has it: one adapter on GPT-2's fused q/k/v
    matrix (h x 3h), three on Llama's separate q, k and v, five on MLA's projections
    (:func:`attention_linears`); "all-linear" adds the MLP's, a mixture of experts' as peft
    adapts them (:data:`PEFT_FUSED_EXPERT_TYPES`). ``model`` is an ``llms.LLMConfig`` or a name
    ``llms.get`` knows; ``targets`` one of :data:`LORA_TARGETS`. Llama-3.1-8B, rank 16 on q, k,
    v and o (``targets="attention"``): 32 layers x 16 x (2·(4096 + 4096) + 2·(4096 + 1024)).
    """
    model = llms.as_config(model)
    values = assumptions.resolve(lora_rank=rank, lora_targets=targets)[0]
    rank, targets = values["lora_rank"], values["lora_targets"]
    rank = checks.count("rank", rank)
    checks.choice("targets", targets, LORA_TARGETS)
    if model.family == "gpt2":
        attention = {"c_attn", "attn.c_proj"}
        per_layer = sum(
            rank * (n_in + n_out)
            for name, n_in, n_out, _ in llms.linear_shapes(model)
            if targets == "all-linear" or name in attention
        )
        return model.n_layers * per_layer
    if not model.layers:
        raise ValueError(
            f"model={model.name!r}: its layers are not in lab_utils/data/llm_configs.toml, so its "
            f"adapters cannot be counted (give its config.json)"
        )
    total = 0
    for layer in model.layers:
        total += sum(
            rank * (n_in + n_out) for _, n_in, n_out in attention_linears(layer.attention, model.hidden)
        )
        if targets == "all-linear":
            total += _mlp_adapter_params(model, layer, rank)
    return total


# --- a whole job on a real model -----------------------------------------------------------


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


def _gpu(gpu) -> hardware.Spec:
    spec = hardware.get(gpu) if isinstance(gpu, str) else gpu
    if not isinstance(spec, hardware.Spec) or spec.kind != "gpu" or not spec.memory_bytes:
        raise ValueError(f"gpu={gpu!r}: give a GPU from hardware.catalog('gpu') or its name")
    return spec


def _usable_bytes(spec: hardware.Spec, reserve_bytes) -> float:
    reserve_bytes = assumptions.resolve(cuda_context_bytes=reserve_bytes)[0]["cuda_context_bytes"]
    reserve_bytes = checks.number("reserve_bytes", reserve_bytes, strict=False)
    usable = spec.memory_bytes - reserve_bytes
    if usable <= 0:
        raise ValueError(
            f"reserve_bytes={reserve_bytes!r} leaves nothing of {spec.name}'s {spec.memory_bytes} bytes"
        )
    return usable


def usable_bytes(gpu, reserve_bytes=None) -> float:
    """Bytes a job may use on one ``gpu`` (a name or Spec): the vendor's memory less ``reserve_bytes``
    for the CUDA context (None: the ``cuda_context_bytes`` assumption); what :func:`fits` and
    :func:`gpus_needed` compare with."""
    return _usable_bytes(_gpu(gpu), reserve_bytes)


def fits(n_bytes, gpu, reserve_bytes=None) -> bool:
    """True when ``n_bytes`` fit in one ``gpu`` (a name or Spec) after ``reserve_bytes``.

    Compares with the vendor's nominal memory (``Spec.memory_bytes``) less the CUDA context;
    fragmentation can make a job that "fits" by a few percent fail in practice.
    """
    n_bytes = checks.number("n_bytes", n_bytes)
    return n_bytes <= _usable_bytes(_gpu(gpu), reserve_bytes)


def gpus_needed(n_bytes, gpu, reserve_bytes=None) -> int:
    """The fewest ``gpu`` s that could hold ``n_bytes`` if the job split evenly across them.

    A lower bound: ceil(n_bytes / (memory - reserve)). Real splits (tensor or pipeline
    parallelism, ZeRO-3) add communication buffers and rarely divide evenly.
    """
    n_bytes = checks.number("n_bytes", n_bytes)
    return math.ceil(n_bytes / _usable_bytes(_gpu(gpu), reserve_bytes))


_MANY_GPUS = 2**30
"""More GPUs than any job rents: ZeRO-3's shards per GPU at this count are the gathered module alone."""


class DoesNotFit(ValueError):
    """No number of GPUs of one type holds the job (what each GPU keeps besides its shards is too much)."""


def gpus_to_hold(model, estimate: JobEstimate, gpu) -> int:
    """The fewest ``gpu`` s that hold the job ``estimate`` (:func:`job_estimate` of ``model``, an
    ``llms`` name or LLMConfig): the one count the command line, the cost and the advisor give.
    Its total split evenly (:func:`gpus_needed`), except a full fine-tune on more than one GPU:
    ZeRO-3 as DeepSpeed reserves it (:func:`zero3_bytes_per_gpu`: 18 bytes per parameter over
    the GPUs plus the largest module gathered), beside what each GPU holds besides the model
    state (its activations and the loss at its peak, not sharded). Llama-3.1-8B in full at 4,096
    tokens: 136.8 GB, 2 H100s split evenly, 3 by ZeRO-3 (74.4 GB of state and 8.3 GB more each
    on 2). :class:`DoesNotFit` when no count does."""
    config = llms.as_config(model)
    spec = _gpu(gpu)
    n_gpus = gpus_needed(estimate.total_bytes, spec)
    if estimate.method != "full" or n_gpus == 1 or not config.layers:
        return n_gpus
    state = sum(estimate.part(label) for label in ("weights", "gradients", "optimizer states"))
    per_gpu = estimate.total_bytes - state
    if not fits(zero3_bytes_per_gpu(config, _MANY_GPUS) + per_gpu, spec):
        raise DoesNotFit(
            f"gpu={spec.name!r}: each GPU holds {per_gpu / 1e9:.1f} GB of activations and loss beside "
            "its ZeRO-3 shards and the gathered module, more than it has: no number of GPUs holds the "
            "job (a shorter sequence, a chunked loss or a larger GPU would)"
        )
    while not fits(zero3_bytes_per_gpu(config, n_gpus) + per_gpu, spec):
        n_gpus += 1
    return n_gpus


@dataclass(frozen=True)
class LongestFit:
    """The longest sequence of one job that fits one GPU: ``seq_len`` tokens (0 when not even
    one token fits), ``limited_by`` "memory" or "context window" (the model's
    ``max_positions`` fits), and the :class:`JobEstimate` at that length (None at 0)."""

    gpu: str
    seq_len: int
    limited_by: str
    estimate: JobEstimate | None


def longest_seq_len(model, gpu, *, method: str = "inference", reserve_bytes=None, **job) -> LongestFit:
    """The longest ``seq_len`` at which :func:`job_estimate` of ``model`` and ``method`` fits one
    ``gpu`` (:func:`fits`, less ``reserve_bytes``), up to the model's context window (2**24
    tokens where the catalog has none). ``job``: the other keywords of :func:`job_estimate`
    (precision, batch, recompute, lora_rank, attention, lora_targets, loss_impl). Memory grows
    with the length, so a bisection finds it.

    >>> longest_seq_len("llama-3.1-8b", "H100 SXM", method="qlora").seq_len
    35118
    """
    if "seq_len" in job:
        raise TypeError("longest_seq_len() finds seq_len: do not give it")
    spec = _gpu(gpu)
    config = llms.as_config(model)
    limit = config.max_positions or 2**24

    def estimate(seq_len: int) -> JobEstimate:
        return job_estimate(config, method=method, seq_len=seq_len, **job)

    def fit(seq_len: int) -> bool:
        return fits(estimate(seq_len).total_bytes, spec, reserve_bytes)

    if fit(limit):
        return LongestFit(spec.name, limit, "context window", estimate(limit))
    low, high = 0, limit  # fit(low) or low == 0; not fit(high)
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (middle, high) if fit(middle) else (low, middle)
    return LongestFit(spec.name, low, "memory", estimate(low) if low else None)
