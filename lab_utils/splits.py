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

from dataclasses import asdict, dataclass

from lab_utils import assumptions, checks, comms, hardware, interconnects, llms, memory

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


def _expert_rows(config, gpus_per_node, nodes, shape, microbatches, one_split, row) -> list:
    """A mixture of experts' layouts: EP over every GPU (its all-to-alls across nodes at the
    network's pace), and EP inside each node with the nodes data parallel (the all-to-alls on
    NVLink; each expert's gradients all-reduced over the nodes, the replicated weights' over
    every GPU, both across the network)."""
    n = gpus_per_node * nodes
    common = dict(batch=shape["batch"], seq_len=shape["seq_len"], precision=shape["precision"])
    rows = [one_split(expert_parallel(config, n, microbatches=microbatches, **common))]
    if nodes > 1:
        inside = expert_parallel(config, gpus_per_node, microbatches=microbatches, **common)
        experts = sum(layer.routed_expert_params for layer in config.layers)
        expert_grads = _state(experts / gpus_per_node, shape["precision"], "adamw").grads_bytes
        replicated_grads = _state(config.n_params - experts, shape["precision"], "adamw").grads_bytes
        network = comms.ring_all_reduce_bytes(expert_grads, nodes) + comms.ring_all_reduce_bytes(
            replicated_grads, n
        )
        rows.append(
            row(
                f"EP x{gpus_per_node} + DP x{nodes}",
                "EP",
                "DP",
                inside.state_bytes_per_rank,
                inside.all_to_all_bytes_per_step,
                network,
            )
        )
    return rows


# --- from a laptop to a cluster ---------------------------------------------------------------


@dataclass(frozen=True)
class PlanRow:
    """One layout: the split inside a node and across nodes, the state per GPU and whether it
    fits, the bytes each GPU sends per step over NVLink and over the network, their seconds at
    the links' bandwidth (no latency, no overlap with compute), and the bubble."""

    layout: str
    inside_node: str
    across_nodes: str
    state_bytes_per_gpu: float
    fits: bool
    nvlink_bytes_per_step: float
    network_bytes_per_step: float
    communication_s: float
    bubble_fraction: float


@dataclass(frozen=True)
class ClusterPlan:
    """:func:`cluster_plan`'s answer: the job, the links, one row per layout, and the
    assumptions taken ((name, value) pairs)."""

    model: str
    gpu: str
    gpus_per_node: int
    nodes: int
    precision: str
    batch: int
    seq_len: int
    microbatches: int
    nvlink_bytes_per_s: float
    network_bytes_per_s: float
    gpu_memory_bytes: float
    rows: tuple[PlanRow, ...]
    assumptions: tuple[tuple[str, object], ...]

    def to_dict(self) -> dict:
        return asdict(self)


def cluster_plan(
    model,
    gpu,
    gpus_per_node: int | None = None,
    nodes: int | None = None,
    *,
    batch: int | None = None,
    seq_len: int | None = None,
    microbatches: int | None = None,
    network_bytes_per_s=None,
) -> ClusterPlan:
    """Size DP, FSDP, TP and PP, and TP inside a node combined with FSDP or PP across nodes
    (and for a mixture of experts EP over every GPU, and EP inside a node with DP across),
    for a full fine-tune (mixed precision, AdamW) of catalog ``model`` on ``nodes`` nodes of
    ``gpus_per_node`` catalog ``gpu`` (default: the ``max_devices`` and ``cluster_nodes`` assumptions).

    A collective that spans nodes runs at the network's pace (``network_bytes_per_s`` per GPU,
    default the ``inter_node_bytes_per_s`` assumption); one inside a node at NVLink's
    (``lab_utils.interconnects``; PCIe's for a GPU without NVLink, in the NVLink columns).
    Parameters not in the layers (embeddings, head) are spread like the layers (Megatron splits
    the vocabulary too). Each model replica processes ``microbatches`` x ``batch`` sequences per
    step: the pipeline as that many micro-batches, the other splits as one batch (so FSDP gathers
    the weights once per step).
    """
    config = llms.as_config(model)
    spec = hardware.get(gpu) if isinstance(gpu, str) else hardware.as_spec(gpu)
    if spec.kind != "gpu" or not spec.memory_bytes:
        raise ValueError(f"gpu={spec.name!r}: must be a catalog GPU with its memory")
    values, taken = assumptions.resolve(
        max_devices=gpus_per_node,
        cluster_nodes=nodes,
        batch=batch,
        seq_len=seq_len,
        pipeline_microbatches=microbatches,
        inter_node_bytes_per_s=network_bytes_per_s,
    )
    gpus_per_node = checks.count("gpus_per_node", values["max_devices"])
    nodes = checks.count("nodes", values["cluster_nodes"])
    batch = checks.count("batch", values["batch"])
    seq_len = checks.count("seq_len", values["seq_len"])
    m = checks.count("microbatches", values["pipeline_microbatches"])
    network = checks.number("network_bytes_per_s", values["inter_node_bytes_per_s"])
    precision = assumptions.precision_for("full")
    taken["precision.full"] = precision
    links = interconnects.get(spec.name)
    nvlink = links.nvlink_bytes_per_s_each_way or links.pcie_bytes_per_s_each_way  # PCIe where no NVLink
    n, layers, hidden, psi = gpus_per_node * nodes, config.n_layers, config.hidden, config.n_params
    shape = {"batch": batch, "seq_len": seq_len, "hidden": hidden, "precision": precision}

    def row(layout, inside, across, state, nvlink_bytes, network_bytes, bubble=0.0):
        return PlanRow(
            layout,
            inside,
            across,
            state,
            state <= spec.memory_bytes,
            nvlink_bytes,
            network_bytes,
            nvlink_bytes / nvlink + network_bytes / network,
            bubble,
        )

    dp = data_parallel(psi, n, precision=precision)
    fsdp = fully_sharded(psi, n, precision=precision)  # one gather per step: the m micro-batches as one
    tp_node = tensor_parallel(psi, gpus_per_node, n_layers=layers, microbatches=m, **shape)
    tp_all = tensor_parallel(psi, n, n_layers=layers, microbatches=m, **shape)
    across = "-" if nodes == 1 else None

    def one_split(split: Split):  # a split over every GPU: across nodes, it runs at the network's pace
        name = split.name.upper()
        on_nvlink, on_network = (split.bytes_per_step, 0.0) if nodes == 1 else (0.0, split.bytes_per_step)
        return row(
            f"{name} x{n}",
            name,
            across or name,
            split.state_bytes_per_rank,
            on_nvlink,
            on_network,
            split.bubble_fraction,
        )

    rows = [one_split(dp), one_split(fsdp), one_split(tp_all)]
    if n > 1:
        rows.append(one_split(pipeline_parallel(psi / n, n, microbatches=m, **shape)))
    if nodes > 1:
        # TP inside each node; the node's shard of the model (psi / t) is what goes across.
        shard = psi / gpus_per_node
        fsdp_across = fully_sharded(shard, nodes, precision=precision)
        rows.append(
            row(
                f"TP x{gpus_per_node} + FSDP x{nodes}",
                "TP",
                "FSDP",
                fsdp_across.state_bytes_per_rank,
                tp_node.bytes_per_step,
                fsdp_across.bytes_per_step,
            )
        )
        pp_across = pipeline_parallel(shard / nodes, nodes, microbatches=m, **shape)
        # each GPU sends its 1/t of the boundary activations (sequence-parallel layout)
        rows.append(
            row(
                f"TP x{gpus_per_node} + PP x{nodes}",
                "TP",
                "PP",
                pp_across.state_bytes_per_rank,
                tp_node.bytes_per_step / nodes,
                pp_across.bytes_per_step / gpus_per_node,
                pp_across.bubble_fraction,
            )
        )
    if config.is_moe:
        rows += _expert_rows(config, gpus_per_node, nodes, shape, m, one_split, row)
    return ClusterPlan(
        config.name,
        spec.name,
        gpus_per_node,
        nodes,
        precision,
        batch,
        seq_len,
        m,
        nvlink,
        network,
        float(spec.memory_bytes),
        tuple(rows),
        tuple(taken.items()),
    )
