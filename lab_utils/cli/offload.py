"""``lab-utils offload``: a model split between a GPU and its host's RAM (llama.cpp, vLLM offload)."""

from __future__ import annotations

import argparse
import json

from lab_utils.cli.common import (
    ENGINE_HELP,
    UsageError,
    add_command,
    engine_name,
    gpu_name,
    host_name,
    non_negative_int,
    positive_float,
    positive_int,
    print_assumptions,
    text_table,
)

_JSON_FIELDS = (
    "model",
    "gpu",
    "host",
    "placement",
    "precision",
    "gpu_layers",
    "n_layers",
    "cpu_moe_layers",
    "stream_bytes",
    "gpu_bytes",
    "host_bytes",
    "fits",
    "gpu_s",
    "host_s",
    "link_s",
    "decode_bound_tokens_per_s",
    "decode_tokens_per_s",
    "prefill_tokens_per_s",
    "prefill_host_path",
    "engine",
)


def model_or_config(text: str) -> str:
    """An argparse type: a catalog model, a config.json (or its folder), or hf:<repo id>, checked
    by ``llms.resolve`` while parsing; the text itself goes on to the calculator."""
    from lab_utils import llms

    try:
        llms.resolve(text)
    except (TypeError, ValueError) as error:
        raise argparse.ArgumentTypeError(str(error)) from None
    return text


def run(args: argparse.Namespace) -> int:
    """Place ``--model`` on ``--gpu`` and ``--host`` (``lab_utils.offload.estimate``) and print it."""
    from lab_utils import offload
    from lab_utils.units import format_bytes, format_seconds

    placement = dict(
        gpu_layers=args.gpu_layers,
        cpu_moe_layers=args.cpu_moe_layers,
        experts_on_host=args.experts_on_host,
        stream_bytes=None if args.stream_gb is None else args.stream_gb * 1e9,
    )
    try:
        placed = offload.estimate(
            args.model,
            gpu=args.gpu,
            host=args.host,
            precision=args.precision,
            context_len=args.context_len,
            host_memory_bytes=None if args.host_ram_gb is None else args.host_ram_gb * 1e9,
            engine=args.engine,
            **placement,
        )
    except ValueError as why:
        raise UsageError(str(why)) from None
    if args.json:
        print(json.dumps({field: getattr(placed, field) for field in _JSON_FIELDS}, indent=2))
        return 0
    print(f"{placed.model} in {placed.precision} on {placed.gpu} + {placed.host}: {placed.placement}")
    rows = [
        ("on the GPU", format_bytes(placed.gpu_bytes)),
        ("in the host's RAM", format_bytes(placed.host_bytes)),
        ("fits", f"{'yes' if placed.fits else 'no'} (RAM: {format_bytes(placed.host_memory_bytes)})"),
        ("a token: GPU part", format_seconds(placed.gpu_s)),
        ("a token: host part", format_seconds(placed.host_s)),
        ("a token: PCIe", format_seconds(placed.link_s)),
        ("decode, bound", f"{placed.decode_bound_tokens_per_s:.1f} tokens/s"),
        *(
            [(f"decode, {placed.engine}", f"{placed.decode_tokens_per_s:.1f} tokens/s")]
            if placed.engine != "bound"
            else []
        ),
        ("prefill", f"{placed.prefill_tokens_per_s:,.0f} tokens/s (host weights {placed.prefill_host_path})"),
    ]
    print(text_table(rows))
    for note in placed.engine_notes:
        print(f"note: {note}")
    print_assumptions(placed.assumptions, args)
    return 0


def register(commands) -> None:
    parser = add_command(
        commands,
        "offload",
        run,
        help="a model split between a GPU and its host's RAM: layers (llama.cpp -ngl), experts "
        "(--n-cpu-moe) or weights streamed over PCIe (vLLM --cpu-offload-gb)",
        examples="  lab-utils offload --model llama-3.1-70b --gpu rtx-4090 --host 7950x --gpu-layers 40 "
        "--precision q4_k_m\n"
        "  lab-utils offload --model llama-3.1-8b --gpu rtx-4090 --host 7950x --stream-gb 4 --json",
    )
    parser.add_argument(
        "--model",
        required=True,
        type=model_or_config,
        help="a catalog model (e.g. llama-3.1-70b) or a config.json path",
    )
    parser.add_argument("--gpu", required=True, type=gpu_name, help="a catalog GPU, e.g. rtx-4090")
    parser.add_argument("--host", required=True, type=host_name, help="a catalog CPU, e.g. 7950x")
    where = parser.add_mutually_exclusive_group()
    where.add_argument(
        "--gpu-layers", type=non_negative_int, help="transformer blocks on the GPU, as llama.cpp's -ngl"
    )
    where.add_argument(
        "--cpu-moe-layers",
        type=non_negative_int,
        help="keep the experts of the first N layers in RAM, as llama.cpp's --n-cpu-moe",
    )
    where.add_argument(
        "--experts-on-host", action="store_true", help="every layer's experts in RAM (llama.cpp's --cpu-moe)"
    )
    where.add_argument(
        "--stream-gb", type=positive_float, help="GB of weights streamed over PCIe each step (vLLM)"
    )
    parser.add_argument(
        "--precision",
        help="weights: bf16, fp16, fp8, int8, int4, q4_0, q4_k_m, q8_0, mxfp4 (default: the assumption)",
    )
    parser.add_argument(
        "--context-len", type=positive_int, help="tokens in the KV cache (default: assumption)"
    )
    parser.add_argument(
        "--host-ram-gb", type=positive_float, help="GB of RAM the host has (default: its most)"
    )
    parser.add_argument("--engine", type=engine_name, help=ENGINE_HELP)
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
