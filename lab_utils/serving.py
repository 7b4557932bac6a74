"""An LLM server as it runs: prefill, decode, batching and the KV cache, as roofline bounds.

A server first *prefills* a prompt (every prompt token at once: compute bound), then *decodes*
one token per sequence per step. Each decode step reads every weight once, shared by the whole
batch, plus each sequence's own KV cache, and computes 2 FLOPs per active parameter per
sequence, so its time is at least the larger of

- compute: 2 x active parameters x batch / peak FLOP/s (the dtype ``assumptions.compute_dtype``
  picks), and
- bytes: (weight bytes + batch x KV-cache bytes at the context) / memory bandwidth.

Batching shares the weight read, so tokens/s grow with the batch until the KV cache (or
compute) dominates: throughput saturates at min(peak / (2 x active params), bandwidth / KV
bytes per sequence) x 1 sequence-token, and the memory left beside the weights caps the batch
(:func:`max_batch`). Continuous batching (vLLM, TGI, SGLang) keeps that batch full: a finished
sequence's place goes to the next request, whose prefill runs between decode steps.

Precision: one ``precision=`` keyword ("checkpoint", "bf16"/"fp16", "fp8", "int8", "int4";
default the ``precision.inference`` assumption, "checkpoint": the weights as published, block
FP8, MXFP4 experts beside bf16 attention, int4, or bf16, from the model's quantization_config)
sets the weights' bytes, the KV cache's bytes and the dtype the device computes in together
(:func:`resolve_precision`): fp8 weights compute in FP8 where the device's catalog peak has
fp8, else in 16 bits; int8 and int4 are weight-only (16-bit compute).
``weight_bytes_per_param=`` and ``kv_bytes_per_value=`` override the bytes.

Layers as they are (``llms.Layer``): the KV cache as vLLM lays it out per layer kind (K and V per
KV head; a sliding-window layer at most its window; MLA's latent), and a mixture of experts'
decode step reads the experts its batch touches, E·(1 - (1 - k/E)^B) per MoE layer under
uniform routing (``basics.experts_touched``; ``routing_skew`` for a skewed router).

All figures are lower bounds on time (upper bounds on throughput) from vendor specifications;
``efficiency`` (0 < e <= 1) scales them to what an engine reaches. Pure Python: no torch.

>>> round(decode_step_s("Llama-3.1-8B", device="H100 SXM", context_len=4096) * 1e3, 1)  # ms
5.0
>>> max_batch("Llama-3.1-8B", device="H100 SXM", context_len=4096)
115
"""

from __future__ import annotations

from lab_utils import checks
from lab_utils.serving_bounds import (  # the modules of one idea each, named here as one module
    PRECISIONS,
    Precision,
    StepBound,
    decode_limit,
    decode_step_s,
    kv_bytes_per_sequence,
    max_batch,
    prefill_s,
    replica,
    resolve_precision,
    routing,
    sizable,
    step,
    step_bound_s,
    step_pricer,
)
from lab_utils.serving_estimate import Estimates, ServingEstimate, estimate

__all__ = [
    "PRECISIONS",
    "Precision",
    "Estimates",
    "ServingEstimate",
    "at_load",
    "batch_latency",
    "capacity",
    "decode_limit",
    "decode_step_s",
    "estimate",
    "kv_bytes_per_sequence",
    "max_batch",
    "prefill_s",
    "replica",
    "resolve_precision",
    "routing",
    "sizable",
    "StepBound",
    "step",
    "step_bound_s",
    "step_pricer",
]


def capacity(
    model,
    *,
    device,
    prompt_len,
    output_len,
    latency_target_s,
    precision=None,
    weight_bytes_per_param=None,
    kv_bytes_per_value=None,
    efficiency=None,
    usd_per_hour=None,
    engine=None,
) -> ServingEstimate | None:
    """The batch that serves the most requests/s while each request finishes within
    ``latency_target_s`` (:func:`estimate` at the largest such batch, up to :func:`max_batch`);
    None when even one request alone takes longer, or the weights do not fit."""
    latency_target_s = checks.number("latency_target_s", latency_target_s)
    return Estimates(
        model,
        device=device,
        prompt_len=prompt_len,
        output_len=output_len,
        precision=precision,
        weight_bytes_per_param=weight_bytes_per_param,
        kv_bytes_per_value=kv_bytes_per_value,
        efficiency=efficiency,
        usd_per_hour=usd_per_hour,
        engine=engine,
    ).capacity(latency_target_s)


def batch_latency(
    model,
    *,
    device,
    prompt_len,
    output_len,
    precision=None,
    weight_bytes_per_param=None,
    kv_bytes_per_value=None,
    efficiency=None,
    engine=None,
):
    """A function of n: the seconds a request takes in a batch of n (:func:`estimate`'s
    ``latency_s``), each n computed once; what ``serverless.simulate`` takes as ``service_s``."""

    return Estimates(
        model,
        device=device,
        prompt_len=prompt_len,
        output_len=output_len,
        precision=precision,
        weight_bytes_per_param=weight_bytes_per_param,
        kv_bytes_per_value=kv_bytes_per_value,
        efficiency=efficiency,
        usd_per_hour=0.0,
        engine=engine,
    ).latency_s


def at_load(
    model,
    *,
    device,
    prompt_len,
    output_len,
    requests_per_s,
    precision=None,
    weight_bytes_per_param=None,
    kv_bytes_per_value=None,
    efficiency=None,
    usd_per_hour=None,
    engine=None,
) -> ServingEstimate | None:
    """The server at a steady load of ``requests_per_s``: :func:`estimate` at the smallest batch
    whose requests/s keep up (a request waits for no more than that batch); None when no batch
    that fits (:func:`max_batch`) keeps up: the queue grows without end."""
    requests_per_s = checks.number("requests_per_s", requests_per_s)
    return Estimates(
        model,
        device=device,
        prompt_len=prompt_len,
        output_len=output_len,
        precision=precision,
        weight_bytes_per_param=weight_bytes_per_param,
        kv_bytes_per_value=kv_bytes_per_value,
        efficiency=efficiency,
        usd_per_hour=usd_per_hour,
        engine=engine,
    ).at_load(requests_per_s)
