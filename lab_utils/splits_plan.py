"""From a laptop to a cluster: :func:`cluster_plan` sizes the splits of ``lab_utils.splits``, and
their combinations, for a catalog model on nodes of catalog GPUs: NVLink inside a node
(``lab_utils.interconnects``), the network between nodes (the ``inter_node_bytes_per_s``
assumption). ``lab_utils.splits`` names it all. Pure arithmetic: no torch.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from lab_utils import assumptions, checks, comms, hardware, interconnects, llms
from lab_utils.splits_formulas import (
    Split,
    _state,
    data_parallel,
    expert_parallel,
    fully_sharded,
    pipeline_parallel,
    tensor_parallel,
)


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
