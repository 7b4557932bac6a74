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

from lab_utils import assumptions, checks, hardware, llms
from lab_utils.basics import BYTES_PER_VALUE, weight_bytes  # owned by basics, named here too
from lab_utils.memory_jobs import (  # the modules of one idea each, named here as one module
    JOB_METHODS,
    JobEstimate,
    checkpoint_weight_bytes,
    job_estimate,
    kv_layout,
    param_count_parts,
    precisions_for,
)
from lab_utils.memory_llm import (
    ATTENTION,
    LORA_TARGETS,
    LOSS_IMPLS,
    PEFT_FUSED_EXPERT_TYPES,
    attention_linears,
    kv_cache_bytes,
    llm_activation_bytes,
    lora_params,
    loss_bytes,
)
from lab_utils.memory_training import (
    OFFLOADS,
    OPTIMIZERS,
    RECOMPUTE,
    TRAINING_PRECISIONS,
    TrainingState,
    accelerate_training_bytes,
    activation_bytes,
    tiny_gpt_activation_bytes,
    training_state_bytes,
    training_state_parts,
    zero3_bytes_per_gpu,
)

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
    "precisions_for",
    "usable_bytes",
    "zero3_bytes_per_gpu",
    "tiny_gpt_activation_bytes",
    "training_state_bytes",
    "training_state_parts",
    "weight_bytes",
]


def __getattr__(name: str):
    """``CUDA_CONTEXT_BYTES``: (low, high) bytes a GPU process holds beyond its tensors (CUDA
    context, kernels, allocator slack), the ``cuda_context_low_bytes`` and ``cuda_context_bytes``
    assumptions read when asked (an edit of assumptions.toml reaches it): 0.3 to 2.1 GB (300 MiB
    to 2 GiB as nvidia-smi counts) depending on the GPU and libraries (Hugging Face accelerate's
    estimate-memory documentation). :func:`fits` reserves the upper end by default."""
    if name == "CUDA_CONTEXT_BYTES":
        return (assumptions.value("cuda_context_low_bytes"), assumptions.value("cuda_context_bytes"))
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# --- a job against a GPU ------------------------------------------------------------------


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
