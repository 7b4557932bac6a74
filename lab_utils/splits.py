"""Four ways to split a training job over ranks: memory per rank, bytes per step, the bubble.

Pure arithmetic (no torch), bytes and seconds. A *step* is one optimizer step in which each
model replica runs ``microbatches`` micro-batches of ``batch`` sequences of ``seq_len`` tokens.

- :func:`data_parallel` (DP): every rank holds the whole training state and all-reduces the
  gradients once per step: 2(N-1)/N · G bytes sent per rank (a ring, ``lab_utils.comms``).
- :func:`fully_sharded` (FSDP, ZeRO-3; Rajbhandari et al., arXiv 1910.02054): state / N per
  rank; per micro-batch the weights are all-gathered for the forward and again for the backward
  (except those the root keeps, ``kept_params``), and the gradients reduce-scattered once per
  step: (N-1)/N · (m·(2P - K) + G). With m = 1 and K = 0 that is ZeRO's 3Ψ against DP's 2Ψ.
- :func:`tensor_parallel` (TP; Megatron-LM, Shoeybi et al., arXiv 1909.08053): the attention
  and MLP matrices split column- then row-wise over t ranks; two all-reduces of the activations
  (batch x seq x hidden) per layer in the forward pass and two in the backward.
- :func:`expert_parallel` (EP; GShard, Lepikhin et al., arXiv 2006.16668): a mixture of
  experts' routed experts spread over the ranks, the rest replicated (data parallel); per MoE
  layer and micro-batch each rank sends k copies of its tokens' hidden states to the ranks of
  their experts and gets them back (dispatch and combine, an all-to-all each), forward and
  backward, and all-reduces the replicated weights' gradients once per step.
- :func:`pipeline_parallel` (PP; GPipe, Huang et al., arXiv 1811.06965): consecutive layers on
  p stages; a stage sends its activations forward and their gradients back, once per
  micro-batch, and idles for the bubble (p - 1) / (m + p - 1) of the step.

:func:`cluster_plan` sizes the same splits, and their combinations, for a catalog model on
nodes of catalog GPUs: NVLink inside a node (``lab_utils.interconnects``), the network
between nodes (the ``inter_node_bytes_per_s`` assumption).

>>> round(bubble_fraction(stages=4, microbatches=8), 3)
0.273
>>> dp, fsdp = data_parallel(1e9, 8), fully_sharded(1e9, 8)
>>> round(fsdp.bytes_per_step / dp.bytes_per_step, 2)
1.5
>>> round(dp.state_bytes_per_rank / fsdp.state_bytes_per_rank)
8
"""

from __future__ import annotations

from lab_utils import checks
from lab_utils.splits_formulas import (
    ACTIVATION_BYTES,
    SPLITS,
    Link,
    Split,
    bubble_fraction,
    data_parallel,
    expert_parallel,
    fully_sharded,
    job_link,
    pipeline_parallel,
    sharded_fine_tune,
    tensor_parallel,
)
from lab_utils.splits_plan import ClusterPlan, PlanRow, cluster_plan

__all__ = [
    "ACTIVATION_BYTES",
    "SPLITS",
    "Link",
    "ClusterPlan",
    "PlanRow",
    "Split",
    "bubble_fraction",
    "cluster_plan",
    "data_parallel",
    "expert_parallel",
    "fully_sharded",
    "job_link",
    "pipeline_parallel",
    "sharded_fine_tune",
    "tensor_parallel",
    "tiny_gpt_splits",
]


def tiny_gpt_splits(
    n_ranks: int,
    *,
    vocab_size: int,
    seq_len: int,
    hidden: int,
    n_layers: int,
    batch: int,
    microbatches: int,
    precision: str = "fp32",
    optimizer: str = "adamw",
) -> dict[str, Split]:
    """The four splits of ``lab_utils.models.TinyGPT`` as ``scripts/split_train.py`` runs them
    ({"dp", "fsdp", "tp", "pp"}; the pipeline on 2 stages, its largest stage).

    Its parameters: a tied embedding v·h, positions s·h, per block 12h² + 13h, a final norm 2h.
    FSDP keeps the root's (embeddings, final norm) gathered through the step; TP replicates the
    embeddings, the norms and the row-wise layers' biases (6h per block); the pipeline puts the
    embeddings and the first half of the blocks on stage 0, the rest, the final norm and a copy
    of the tied embedding (its output layer) on stage 1.
    """
    v, s, h, n = (
        checks.count(name, value)
        for name, value in (
            ("vocab_size", vocab_size),
            ("seq_len", seq_len),
            ("hidden", hidden),
            ("n_layers", n_layers),
        )
    )
    block = 12 * h * h + 13 * h
    n_params = v * h + s * h + n * block + 2 * h
    root = v * h + s * h + 2 * h
    common = {"precision": precision, "optimizer": optimizer}
    first_half = n - n // 2
    stage_params = max(v * h + s * h + first_half * block, (n // 2) * block + 2 * h + v * h)
    return {
        "dp": data_parallel(n_params, n_ranks, **common),
        "fsdp": fully_sharded(n_params, n_ranks, kept_params=root, **common),
        "tp": tensor_parallel(
            n_params,
            n_ranks,
            n_layers=n,
            batch=batch,
            seq_len=s,
            hidden=h,
            replicated_params=root + 6 * h * n,
            **common,
        ),
        "pp": pipeline_parallel(
            stage_params,
            2,
            batch=batch,
            seq_len=s,
            hidden=h,
            microbatches=microbatches,
            tied_params=v * h,
            **common,
        ),
    }
