"""FLOPs and hours: a training or inference job's FLOPs (6·N·D, 4·N·D for LoRA, 2·N per token,
plus attention's :data:`ATTENTION_TERMS`), the MFU by regime, hours at a peak and MFU, and the
bandwidth bound of a decode step. Named by ``lab_utils.economics``. Pure Python: no torch.
"""

from __future__ import annotations

from lab_utils import assumptions, basics, checks, llms
from lab_utils.basics import FLOPS_PER_PARAM_PER_TOKEN
from lab_utils.prices import SECONDS_PER_HOUR

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
