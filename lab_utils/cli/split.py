"""``lab-utils split``: data, fully sharded, tensor and pipeline parallel layouts on nodes of GPUs."""

from __future__ import annotations

import argparse
import json

from lab_utils.cli.common import (
    MODEL_HELP,
    add_command,
    gpu_name,
    model_name,
    positive_float,
    positive_int,
    print_assumptions,
    text_table,
)


def run(args: argparse.Namespace) -> int:
    """Size DP, FSDP, TP, PP and their combinations for a model on nodes of GPUs (``lab_utils.splits``)."""
    from lab_utils import splits
    from lab_utils.units import format_bytes, format_rate, format_seconds

    network = None if args.network_gbytes_per_s is None else args.network_gbytes_per_s * 1e9
    plan = splits.cluster_plan(
        args.model,
        args.gpu,
        args.gpus_per_node,
        args.nodes,
        batch=args.batch,
        seq_len=args.seq_len,
        microbatches=args.microbatches,
        network_bytes_per_s=network,
    )
    held = _gpus_to_hold(plan, args.model)
    if args.json:
        print(json.dumps({**plan.to_dict(), "gpus_to_hold": held}, indent=2))
        return 0
    print(
        f"{plan.model}, full fine-tune in {plan.precision}, on {plan.nodes} node(s) x {plan.gpus_per_node} "
        f"{plan.gpu} ({format_bytes(plan.gpu_memory_bytes, binary=False)} each); per step each model replica "
        f"runs {plan.microbatches} x {plan.batch} sequences of {plan.seq_len} tokens"
    )
    print(
        f"links: NVLink {format_rate(plan.nvlink_bytes_per_s, 'B/s')} inside a node, network "
        f"{format_rate(plan.network_bytes_per_s, 'B/s')} per GPU across nodes (each way)"
    )
    rows = [
        (
            row.layout,
            row.inside_node,
            row.across_nodes,
            format_bytes(row.state_bytes_per_gpu, binary=False),
            "yes" if row.fits else "no",
            format_bytes(row.nvlink_bytes_per_step, binary=False),
            format_bytes(row.network_bytes_per_step, binary=False),
            format_seconds(row.communication_s),
            f"{row.bubble_fraction:.0%}",
        )
        for row in plan.rows
    ]
    print(
        text_table(
            rows,
            (
                "layout",
                "in node",
                "across",
                "state/GPU",
                "fits",
                "NVLink/step",
                "network/step",
                "comm time",
                "bubble",
            ),
            ("left", "left", "left", "right", "left", "right", "right", "right", "right"),
        )
    )
    print(
        "state: weights, gradients, AdamW states (no activations); comm time: bytes / bandwidth, "
        "no latency, no overlap with compute"
    )
    print(
        "the whole job (each GPU's activations and loss too, ZeRO-3 as DeepSpeed reserves it): "
        + ("no number of them holds it" if held is None else f"{held} x {plan.gpu}")
        + " (memory.gpus_to_hold, as lab-utils memory and cost fine-tune)"
    )
    print_assumptions(plan.assumptions, args)
    return 0


def _gpus_to_hold(plan, model) -> int | None:
    """The GPUs that hold the whole full fine-tune of ``model`` (the one the plan was made for:
    a catalog name, a config.json or an LLMConfig) at the plan's batch and sequence
    (``memory.gpus_to_hold``, the count every face gives); None when no count does."""
    from lab_utils import memory

    estimate = memory.job_estimate(model, "full", batch=plan.batch, seq_len=plan.seq_len)
    try:
        return memory.gpus_to_hold(model, estimate, plan.gpu)
    except memory.DoesNotFit:
        return None


def register(commands) -> None:
    parser = add_command(
        commands,
        "split",
        run,
        help="memory per GPU and communication per step of data, fully sharded, tensor and pipeline parallel "
        "training on nodes of GPUs",
        examples="  lab-utils split --model llama-3.1-70b --gpu h100 --gpus-per-node 8 --nodes 4\n"
        "  lab-utils split --model llama-3.1-8b --gpu a100-80gb --nodes 1 --json",
    )
    parser.add_argument("--model", required=True, type=model_name, help=MODEL_HELP)
    parser.add_argument("--gpu", required=True, type=gpu_name, help="a catalog GPU, e.g. h100")
    parser.add_argument("--gpus-per-node", type=positive_int, help="GPUs per node (default: the assumption)")
    parser.add_argument("--nodes", type=positive_int, help="nodes (default: the assumption)")
    parser.add_argument(
        "--batch", type=positive_int, help="sequences per micro-batch (default: the assumption)"
    )
    parser.add_argument("--seq-len", type=positive_int, help="tokens per sequence (default: the assumption)")
    parser.add_argument(
        "--microbatches", type=positive_int, help="micro-batches per step (default: the assumption)"
    )
    parser.add_argument(
        "--network-gbytes-per-s",
        type=positive_float,
        help="GB/s each way per GPU between nodes (default: the assumption)",
    )
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
