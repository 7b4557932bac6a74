"""``lab-utils memory``: the memory a job needs, part by part, and the GPUs it fits."""

from __future__ import annotations

import argparse
import json

from lab_utils.cli.common import (
    MODEL_HELP,
    UsageError,
    add_command,
    answer_json,
    gpu_name,
    host_name,
    model_name,
    positive_float,
    positive_int,
    print_assumptions,
    text_table,
)


def run(args: argparse.Namespace) -> int:
    from lab_utils import assumptions, hardware, memory
    from lab_utils.units import bytes_label, format_bytes

    values, taken = assumptions.resolve(**{f"precision__{args.method}": args.precision})
    precision = values[f"precision.{args.method}"]
    if precision not in memory.precisions_for(args.method):
        raise UsageError(
            f"argument --precision: {precision!r} is not allowed with --method {args.method}; "
            f"use one of {', '.join(memory.precisions_for(args.method))}"
        )
    job = dict(
        method=args.method,
        precision=precision,
        batch=args.batch,
        recompute=args.recompute,
        lora_rank=args.lora_rank,
        attention=args.attention,
        lora_targets=args.lora_targets,
        loss_impl=args.loss,
    )
    if args.max_seq_len:
        return _longest(args, job, taken)
    say = (lambda *_: None) if args.json else print  # JSON alone on stdout
    if args.model is not None:
        estimate = memory.job_estimate(args.model, seq_len=args.seq_len, **job)
        parts, total = estimate.parts, estimate.total_bytes
        taken.update(estimate.assumptions)
        recompute = (
            ""
            if args.method == "inference"
            else f", {estimate.recompute} recompute, {estimate.attention} attention, "
            f"{estimate.loss_impl} loss"
        )
        say(
            f"{estimate.model}, {estimate.method} in {estimate.precision}, batch {estimate.batch} "
            f"x {estimate.seq_len} tokens{recompute}"
        )
        for label in estimate.left_out:
            say(f"  ({label}: left out, the catalog lacks the model's shape)")
    else:
        parts = memory.param_count_parts(args.params, args.method, precision)
        total = sum(v for _, v in parts)
        say(
            f"{args.params:.3g} parameters, {args.method} in {precision} "
            "(a lower bound: the weights and training state only; give --model for the KV cache, adapters "
            "and activations)"
        )
    specs = [spec for spec in hardware.catalog("gpu") if spec.memory_bytes]
    if args.model is not None:  # the one count the cost and the advisor give (memory.gpus_to_hold)
        gpus = [(spec, _gpus_to_hold(memory, args.model, estimate, spec)) for spec in specs]
    else:
        gpus = [(spec, memory.gpus_needed(total, spec)) for spec in specs]
    zero3 = args.model is not None and args.method == "full"
    data = {
        "parts_bytes": dict(parts),
        "total_bytes": total,
        "assumptions": dict(taken),
        "gpus_needed": {spec.name: n for spec, n in gpus},
        "usable_bytes": {spec.name: memory.usable_bytes(spec) for spec, _ in gpus},
    }
    if answer_json(args, data):
        return 0
    print(
        text_table(
            [*((label, format_bytes(value)) for label, value in parts), ("total", format_bytes(total))],
            ("part", bytes_label("memory")),
            ("left", "right"),
        )
    )
    rows = [
        (
            spec.name,
            format_bytes(spec.memory_bytes),
            format_bytes(memory.usable_bytes(spec)),
            _verdict(n, zero3),
        )
        for spec, n in gpus
    ]
    print("\nCatalog GPUs (usable: the vendor's memory less the CUDA context reserve, cuda_context_bytes):")
    print(text_table(rows, ("GPU", "vendor memory", "usable", "verdict"), ("left", "right", "right", "left")))
    if args.model is not None and args.gpu is not None and not memory.fits(total, args.gpu):
        _offloaded(args, estimate, taken)
    print_assumptions({**taken, "cuda_context_bytes": assumptions.value("cuda_context_bytes")}, args)
    return 0


def _gpus_to_hold(memory, model, estimate, spec) -> int | None:
    """The fewest GPUs that hold the job (``memory.gpus_to_hold``); None when no count does."""
    try:
        return memory.gpus_to_hold(model, estimate, spec)
    except memory.DoesNotFit:
        return None


def _verdict(n: int | None, zero3: bool) -> str:
    if n is None:
        return "no number of them (ZeRO-3: activations and loss on each)"
    if n == 1:
        return "fits on one"
    return f"needs {n} (ZeRO-3 as DeepSpeed reserves it)" if zero3 else f"needs at least {n} (split evenly)"


def _offloaded(args: argparse.Namespace, estimate, taken: dict) -> None:
    """The job does not fit ``--gpu``: the placements with the host's RAM that do (``--host``)."""
    from lab_utils import assumptions, memory, offload
    from lab_utils.units import format_bytes

    host = args.host or taken.setdefault("offload_host", assumptions.value("offload_host"))
    print(f"\nIt does not fit one {args.gpu}. With the RAM of its host ({host}):")
    if args.method == "inference":
        placed = offload.fitting_placements(
            args.model,
            gpu=args.gpu,
            host=host,
            precision=estimate.precision,
            context_len=estimate.seq_len,
            batch=estimate.batch,
        )
        rows = [
            (
                p.placement,
                format_bytes(p.gpu_bytes),
                format_bytes(p.host_bytes),
                f"{p.decode_bound_tokens_per_s:.1f}",
            )
            for p in placed
        ]
        headers = ("placement (lab-utils offload)", "GPU", "host RAM", "decode tokens/s (bound)")
    else:
        kinds = memory.OFFLOADS if args.method == "full" else memory.OFFLOADS[:1]
        jobs = [
            (
                kind,
                memory.job_estimate(
                    args.model, seq_len=estimate.seq_len, offload=kind, **_job(args, estimate)
                ),
            )
            for kind in kinds
        ]
        rows = [
            (
                kind,
                format_bytes(job.gpu_bytes),
                format_bytes(job.host_bytes),
                "yes" if memory.fits(job.gpu_bytes, args.gpu) else "no",
            )
            for kind, job in jobs
        ]
        headers = ("offload (DeepSpeed)", "GPU", "host RAM", "fits the GPU")
    print(text_table(rows, headers, ("left", "right", "right", "right")) if rows else "  none fits")


def _job(args: argparse.Namespace, estimate) -> dict:
    return dict(
        method=args.method,
        precision=estimate.precision,
        batch=estimate.batch,
        recompute=estimate.recompute,
        lora_rank=args.lora_rank,
        attention=estimate.attention,
        lora_targets=args.lora_targets,
        loss_impl=estimate.loss_impl,
    )


def _longest(args: argparse.Namespace, job: dict, taken: dict) -> int:
    """``lab-utils memory --max-seq-len``: the longest sequence of the job that fits ``--gpu``."""
    from lab_utils import memory
    from lab_utils.units import bytes_label, format_bytes

    if args.model is None or args.gpu is None:
        raise UsageError("argument --max-seq-len: needs --model and --gpu")
    if args.seq_len is not None:
        raise UsageError("argument --max-seq-len: finds the sequence length; leave out --seq-len")
    fit = memory.longest_seq_len(args.model, args.gpu, **job)
    estimate = fit.estimate
    if estimate is not None:
        taken.update(estimate.assumptions)
    if args.json:
        print(
            json.dumps(
                {
                    "gpu": fit.gpu,
                    "seq_len": fit.seq_len,
                    "limited_by": fit.limited_by,
                    "parts_bytes": dict(estimate.parts) if estimate else {},
                    "total_bytes": estimate.total_bytes if estimate else None,
                    "assumptions": dict(taken),
                },
                indent=2,
                default=str,
            )
        )
        return 0
    if estimate is None:
        print(f"{args.model}, {args.method}: not even one token fits on one {fit.gpu} (less a CUDA context)")
        return 0
    print(
        f"{estimate.model}, {estimate.method} in {estimate.precision}, batch {estimate.batch}, "
        f"on one {fit.gpu} (less a CUDA context): at most {fit.seq_len:,} tokens per sequence "
        f"(limited by {fit.limited_by})"
    )
    print(
        text_table(
            [
                *((label, format_bytes(value)) for label, value in estimate.parts),
                ("total", format_bytes(estimate.total_bytes)),
            ],
            ("part", bytes_label("memory")),
            ("left", "right"),
        )
    )
    print_assumptions(taken, args)
    return 0


def register(commands) -> None:
    from lab_utils import memory

    parser = add_command(
        commands,
        "memory",
        run,
        help="memory a model needs, part by part, and which catalog GPUs it fits on",
        examples="  lab-utils memory --params 8e9\n"
        "  lab-utils memory --model llama-3.1-8b --method qlora\n"
        "  lab-utils memory --model llama-3.1-8b --method lora --seq-len 4096 --recompute none\n"
        "  lab-utils memory --model llama-3.1-8b --method qlora --gpu rtx-4090 --max-seq-len",
    )
    which = parser.add_mutually_exclusive_group(required=True)
    which.add_argument("--params", type=positive_float, help="parameter count, e.g. 8e9")
    which.add_argument("--model", type=model_name, help=MODEL_HELP)
    parser.add_argument("--method", default="inference", choices=memory.JOB_METHODS)
    parser.add_argument(
        "--precision",
        default=None,
        choices=tuple(dict.fromkeys((*memory.BYTES_PER_VALUE, *memory.TRAINING_PRECISIONS))),
        help="default: the method's (see the assumptions printed with the answer)",
    )
    parser.add_argument("--batch", type=positive_int, help="sequences at once (default: the assumption)")
    parser.add_argument("--seq-len", type=positive_int, help="tokens per sequence (default: the assumption)")
    parser.add_argument(
        "--recompute",
        choices=memory.RECOMPUTE,
        help="activation recomputation for fine-tunes (default: the assumption)",
    )
    parser.add_argument("--lora-rank", type=positive_int, help="LoRA rank (default: the assumption)")
    parser.add_argument(
        "--lora-targets", choices=memory.LORA_TARGETS, help="layers LoRA adapts (default: the assumption)"
    )
    parser.add_argument(
        "--attention",
        choices=memory.ATTENTION,
        help="attention kernel of a fine-tune: eager keeps seq x seq scores (default: the assumption)",
    )
    parser.add_argument(
        "--loss",
        choices=memory.LOSS_IMPLS,
        help="how a fine-tune computes its loss: hf (full fp32 logits), chunked (torchtune), "
        "fused (Liger-style kernel) (default: the assumption)",
    )
    parser.add_argument(
        "--gpu",
        type=gpu_name,
        help="a catalog GPU, for --max-seq-len; a job that does not fit it also shows the placements "
        "with the host's RAM that do (lab-utils offload)",
    )
    parser.add_argument("--host", type=host_name, help="the GPU's host CPU (default: the assumption)")
    parser.add_argument(
        "--max-seq-len",
        action="store_true",
        help="print the longest sequence of this job that fits one --gpu",
    )
    parser.add_argument("--json", action="store_true", help="print JSON (bytes) instead of tables")
