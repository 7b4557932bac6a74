"""The splits' formulas, one job over ranks: memory per rank and bytes per step of DP, FSDP, TP,
EP and PP, the pipeline's bubble, and the link a job's GPUs share. The sources and the
formulas: ``lab_utils.splits``, which names them all. Pure arithmetic: no torch.
"""

from __future__ import annotations

from dataclasses import dataclass

from lab_utils import assumptions, checks, comms, hardware, interconnects, llms, memory

SPLITS = ("dp", "fsdp", "tp", "pp")
"""Data parallel, fully sharded data parallel (ZeRO-3), tensor parallel, pipeline parallel: the
splits ``scripts/split_train.py`` runs on the tiny GPT (expert parallelism, :func:`expert_parallel`,
needs a mixture of experts)."""

ACTIVATION_BYTES = {"mixed": 2, "bf16": 2, "autocast": 2, "fp32": 4}
"""Bytes per activation value sent between ranks, per training precision (autocast and mixed
precision compute, and so send, in 16 bits)."""


@dataclass(frozen=True)
class Split:
    """One split on ``n_ranks`` ranks: the training state (weights, gradients, optimizer state)
    each rank holds, the bytes it sends per step, and the share of the step it idles (the
    pipeline bubble; 0 for the others). Activations are not in ``state_bytes_per_rank``.
    ``all_to_all_bytes_per_step``: the part of ``bytes_per_step`` sent in all-to-alls (expert
    parallelism's dispatch and combine; 0 for the others)."""

    name: str
    n_ranks: int
    state_bytes_per_rank: float
    bytes_per_step: float
    bubble_fraction: float = 0.0
    all_to_all_bytes_per_step: float = 0.0


def _state(n_params, precision, optimizer, zero_stage=0, data_parallel=1) -> memory.TrainingState:
    return memory.training_state_bytes(
        n_params, precision=precision, optimizer=optimizer, zero_stage=zero_stage, data_parallel=data_parallel
    )


def data_parallel(n_params, n_ranks: int, *, precision: str = "mixed", optimizer: str = "adamw") -> Split:
    """DP: the whole state on every rank; one ring all-reduce of the gradients per step."""
    state = _state(n_params, precision, optimizer)
    return Split(
        "dp",
        checks.count("n_ranks", n_ranks),
        state.total_bytes,
        comms.ring_all_reduce_bytes(state.grads_bytes, n_ranks),
    )


def fully_sharded(
    n_params,
    n_ranks: int,
    *,
    precision: str = "mixed",
    optimizer: str = "adamw",
    microbatches: int = 1,
    kept_params=0,
) -> Split:
    """FSDP / ZeRO-3: state / N; bytes (N-1)/N · (m·(2P - K) + G) per rank per step.

    P: the weights' bytes, G: the gradients', K: the bytes of ``kept_params`` parameters that stay
    gathered from the forward to the backward pass (FSDP2 keeps the root module's: the
    embeddings and the final norm of a GPT).
    """
    n_ranks = checks.count("n_ranks", n_ranks)
    microbatches = checks.count("microbatches", microbatches)
    kept_params = checks.number("kept_params", kept_params, strict=False)
    full = _state(n_params, precision, optimizer)
    if kept_params > checks.number("n_params", n_params):
        raise ValueError(f"kept_params={kept_params!r}: must not exceed n_params={n_params!r}")
    kept_bytes = full.params_bytes * kept_params / n_params
    gathered = microbatches * (2 * full.params_bytes - kept_bytes)
    return Split(
        "fsdp",
        n_ranks,
        _state(n_params, precision, optimizer, 3, n_ranks).total_bytes,
        (n_ranks - 1) / n_ranks * (gathered + full.grads_bytes),
    )


def tensor_parallel(
    n_params,
    n_ranks: int,
    *,
    n_layers: int,
    batch: int,
    seq_len: int,
    hidden: int,
    precision: str = "mixed",
    optimizer: str = "adamw",
    microbatches: int = 1,
    replicated_params=0,
) -> Split:
    """TP (Megatron): every parameter but ``replicated_params`` split over t ranks; per layer
    and micro-batch, two all-reduces of batch·seq·hidden activations forward, two backward."""
    n_ranks = checks.count("n_ranks", n_ranks)
    replicated = checks.number("replicated_params", replicated_params, strict=False)
    per_rank = replicated + (checks.number("n_params", n_params) - replicated) / n_ranks
    activation = (
        checks.count("batch", batch)
        * checks.count("seq_len", seq_len)
        * checks.count("hidden", hidden)
        * ACTIVATION_BYTES[checks.choice("precision", precision, memory.TRAINING_PRECISIONS)]
    )
    all_reduces = 4 * checks.count("n_layers", n_layers) * checks.count("microbatches", microbatches)
    return Split(
        "tp",
        n_ranks,
        _state(per_rank, precision, optimizer).total_bytes,
        all_reduces * comms.ring_all_reduce_bytes(activation, n_ranks),
    )


def expert_parallel(
    model,
    n_ranks: int,
    *,
    batch: int,
    seq_len: int,
    precision: str = "mixed",
    optimizer: str = "adamw",
    microbatches: int = 1,
) -> Split:
    """EP: ``model``'s (an ``llms`` name or LLMConfig, a mixture of experts) routed experts
    spread evenly over ``n_ranks`` ranks, every other weight replicated. Each rank processes its
    own ``microbatches`` x ``batch`` sequences of ``seq_len`` tokens; per MoE layer and
    micro-batch it dispatches top_k copies of each token's hidden state (activation bytes) to
    the experts' ranks and gets them back (:func:`comms.all_to_all_bytes`, (N-1)/N of them leave
    the rank), in the forward pass and again in the backward pass: 4 all-to-alls. Once per step
    the replicated weights' gradients are all-reduced (a ring over the N ranks)."""
    config = llms.as_config(model)
    n_ranks = checks.count("n_ranks", n_ranks)
    moe = [layer for layer in config.layers if layer.mlp.kind == "moe"]
    if not moe:
        raise ValueError(
            f"model={config.name!r} has no routed experts: expert parallelism needs a mixture of experts"
        )
    experts = sum(layer.routed_expert_params for layer in moe)
    replicated = config.n_params - experts
    value = ACTIVATION_BYTES[checks.choice("precision", precision, memory.TRAINING_PRECISIONS)]
    tokens = checks.count("batch", batch) * checks.count("seq_len", seq_len)
    dispatched = sum(layer.mlp.top_k for layer in moe) * tokens * config.hidden * value
    all_to_all = 4 * checks.count("microbatches", microbatches) * comms.all_to_all_bytes(dispatched, n_ranks)
    gradients = _state(replicated, precision, optimizer).grads_bytes
    return Split(
        "ep",
        n_ranks,
        _state(replicated + experts / n_ranks, precision, optimizer).total_bytes,
        all_to_all + comms.ring_all_reduce_bytes(gradients, n_ranks),
        all_to_all_bytes_per_step=all_to_all,
    )


def sharded_fine_tune(n_params, n_ranks: int, *, method: str = "full") -> Split:
    """A fine-tune of ``n_params`` sharded over ``n_ranks`` GPUs, as FSDP / ZeRO-3 runs it, one
    micro-batch per rank per step. ``method`` "full": :func:`fully_sharded` in mixed precision;
    "lora" and "qlora": the frozen weights (in the method's precision, ``lab_utils.assumptions``)
    all-gathered for the forward and again for the backward, (N-1)/N · 2P per rank; the
    adapters' gradients (a fraction of a percent of the weights) are left out. State per rank:
    the shard of the weights (full: of the training state)."""
    method = checks.choice("method", method, assumptions.FINE_TUNE_METHODS)
    n_ranks = checks.count("n_ranks", n_ranks)
    if method == "full":
        return fully_sharded(n_params, n_ranks, precision=assumptions.precision_for("full"))
    weights = memory.weight_bytes(n_params, assumptions.precision_for(method))
    return Split("fsdp", n_ranks, weights / n_ranks, (n_ranks - 1) / n_ranks * 2 * weights)


@dataclass(frozen=True)
class Link:
    """The pace of a collective over a job's GPUs: ``bytes_per_s`` each way per GPU, over
    ``medium`` ("NVLink", "PCIe", or "network" across servers); ``assumptions`` taken."""

    bytes_per_s: float
    medium: str
    assumptions: tuple[tuple[str, object], ...] = ()


def job_link(gpu, n_gpus: int, gpus_per_server: int) -> Link:
    """How fast each of ``n_gpus`` catalog ``gpu`` s exchanges data in a ring over them, on
    servers of ``gpus_per_server``. Inside one server: NVLink where a switch (or one bridge)
    joins them all, else PCIe (``lab_utils.interconnects``). Across servers the ring also
    crosses the network, and goes at the slower of the two: a GPU of an NVLink-switched server
    (HGX) has its own port (``inter_node_bytes_per_s``); a server of PCIe cards shares one
    (``ethernet_server_bytes_per_s`` over its GPUs). ValueError without link data for ``gpu``."""
    links = interconnects.get(gpu if isinstance(gpu, str) else hardware.as_spec(gpu).name)
    n_gpus = checks.count("n_gpus", n_gpus)
    per_server = checks.count("gpus_per_server", gpus_per_server)
    inside = links.in_server_bytes_per_s(min(n_gpus, per_server))
    medium = "NVLink" if inside == links.nvlink_bytes_per_s_each_way else "PCIe"
    if n_gpus <= per_server:
        return Link(inside, medium)
    name = "inter_node_bytes_per_s" if links.switched else "ethernet_server_bytes_per_s"
    network = assumptions.value(name) / (1 if links.switched else per_server)
    return Link(min(inside, network), "network", ((name, assumptions.value(name)),))


def bubble_fraction(stages: int, microbatches: int) -> float:
    """The share of a GPipe or 1F1B step a stage idles: (p - 1) / (m + p - 1) (GPipe, arXiv 1811.06965)."""
    stages, microbatches = checks.count("stages", stages), checks.count("microbatches", microbatches)
    return (stages - 1) / (microbatches + stages - 1)


def pipeline_parallel(
    stage_params,
    stages: int,
    *,
    batch: int,
    seq_len: int,
    hidden: int,
    microbatches: int,
    precision: str = "mixed",
    optimizer: str = "adamw",
    tied_params=0,
) -> Split:
    """PP: the largest stage's state (``stage_params`` parameters) and the bytes sent by the
    busiest stage: per step the activations of the whole batch (batch·seq·hidden, in
    ``microbatches`` pieces) forward and their gradients back; a middle stage sends both, the
    first and last one each. ``tied_params``: an embedding shared by the first and last stage,
    whose gradients they all-reduce once per step (Megatron-LM's embedding group)."""
    stages = checks.count("stages", stages, minimum=2)
    activation = (
        checks.count("batch", batch)
        * checks.count("seq_len", seq_len)
        * checks.count("hidden", hidden)
        * ACTIVATION_BYTES[checks.choice("precision", precision, memory.TRAINING_PRECISIONS)]
    )
    tied_params = checks.number("tied_params", tied_params, strict=False)
    tied = _state(tied_params, precision, optimizer).grads_bytes if tied_params else 0.0
    sends = activation * (2 if stages > 2 else 1) + comms.ring_all_reduce_bytes(tied, 2)
    return Split(
        "pp",
        stages,
        _state(stage_params, precision, optimizer).total_bytes,
        sends,
        bubble_fraction(stages, microbatches),
    )
