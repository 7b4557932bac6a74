"""``lab-utils latency``: what users wait on one serving replica at a request rate or a
concurrency: TTFT, TPOT and end-to-end latency percentiles, throughput, goodput and $ per 1M
tokens, from the step-by-step simulation of ``lab_utils.replica``."""

from __future__ import annotations

import argparse

from lab_utils.cli.common import (
    ENGINE_HELP,
    UsageError,
    add_command,
    answer_json,
    engine_name,
    fraction,
    gpu_name,
    positive_float,
    positive_int,
    print_assumptions,
    text_table,
)

JSON_KEYS = (
    "ttft_p50_s",
    "ttft_p99_s",
    "tpot_p50_s",
    "tpot_p99_s",
    "e2e_p50_s",
    "output_tokens_per_s",
    "requests_per_s",
    "goodput_requests_per_s",
    "usd_per_million_tokens",
)
"""The keys of ``--json``, in order (ReplicaResult.summary)."""


def model_config(text: str):
    """An argparse type: a catalog name or a config.json path (``llms.resolve``)."""
    from lab_utils import llms

    try:
        return llms.resolve(text)
    except (TypeError, ValueError) as error:
        raise argparse.ArgumentTypeError(str(error)) from None


model_config.__name__ = "model"


def job(args: argparse.Namespace) -> dict:
    """The keywords of ``replica.at_rate`` / ``replica.at_concurrency`` that ``args`` ask for."""
    if (args.spec_decode is None) != (args.spec_acceptance is None):
        raise UsageError("argument --spec-decode: give it with --spec-acceptance (both or neither)")
    if args.spec_draft is not None and args.spec_decode is None:
        raise UsageError("argument --spec-draft: give it with --spec-decode K --spec-acceptance A")
    return dict(
        device=args.gpu,
        prompt_len=args.prompt_len,
        output_len=args.output_len,
        n_requests=args.num_requests,
        n_devices=args.tp,
        precision=args.precision,
        engine=args.engine,
        kv_bytes_per_value=1 if args.kv_cache_dtype == "fp8" else None,
        chunked_prefill=args.chunked_prefill,
        max_num_batched_tokens=args.max_num_batched_tokens,
        max_num_seqs=args.max_num_seqs,
        kv_block_size=args.block_size,
        gpu_memory_utilization=args.gpu_memory_utilization,
        prefix_hit=args.prefix_hit,
        spec_tokens=args.spec_decode or 0,
        spec_acceptance=args.spec_acceptance,
        spec_draft_model=args.spec_draft,
        slo_ttft_s=None if args.slo_ttft_ms is None else args.slo_ttft_ms / 1e3,
        slo_tpot_s=None if args.slo_tpot_ms is None else args.slo_tpot_ms / 1e3,
    )


def run(args: argparse.Namespace) -> int:
    from lab_utils import replica
    from lab_utils.units import format_seconds

    options = job(args)
    try:
        if args.rate is not None:
            result = replica.at_rate(args.model, rate_per_s=args.rate, seed=args.seed, **options)
            load = f"Poisson arrivals at {args.rate:g} requests/s"
        else:
            result = replica.at_concurrency(args.model, concurrency=args.concurrency, **options)
            load = f"{args.concurrency} requests in flight (a closed loop)"
    except ValueError as error:
        raise UsageError(str(error)) from None
    if answer_json(args, result.summary()):
        return 0
    print(
        f"{result.model} on {result.device} through {result.engine}: {len(result.requests):,} requests of "
        f"{args.prompt_len:,} tokens in and {args.output_len:,} out, {load}"
    )
    rows = [
        (name, *(format_seconds(getattr(p, q)) for q in ("p50", "p90", "p95", "p99")))
        for name, p in (
            ("time to first token", result.ttft),
            ("time per output token", result.tpot),
            ("end to end", result.e2e),
            ("queueing", result.queue),
        )
    ]
    print(text_table(rows, headers=("", "p50", "p90", "p95", "p99"), colalign=("left", *("right",) * 4)))
    price = "no price" if result.usd_per_million_tokens is None else f"${result.usd_per_million_tokens:,.3f}"
    print(
        f"{result.output_tokens_per_s:,.0f} output tokens/s, {result.requests_per_s:.3g} requests/s served; "
        f"goodput {result.goodput_requests_per_s:.3g} requests/s within TTFT {result.slo_ttft_s * 1e3:g} ms "
        f"and TPOT {result.slo_tpot_s * 1e3:g} ms; {price} per 1M tokens (prompt and output) at this load"
    )
    print(
        f"{result.steps:,} engine steps, {result.preemptions} preemptions, a KV cache of "
        f"{result.kv_capacity_tokens:,} tokens"
    )
    for note in result.notes:
        print(f"  ({note})")
    print_assumptions(result.assumptions, args)
    return 0


def register(commands) -> None:
    from lab_utils import serving

    parser = add_command(
        commands,
        "latency",
        run,
        help="TTFT, TPOT and goodput of one serving replica at a request rate (simulated step by step)",
        examples="  lab-utils latency --model llama-3.1-8b --gpu h100-sxm --rate 10 --prompt-len 1000 "
        "--output-len 200\n"
        "  lab-utils latency --model llama-3.1-70b --gpu h100-sxm --tp 2 --concurrency 25 "
        "--prompt-len 5000 --output-len 500 --precision fp8 --kv-cache-dtype fp8 --json\n"
        "  lab-utils latency --model config.json --gpu l4 --rate 2 --prompt-len 500 --output-len 200 "
        "--spec-decode 3 --spec-acceptance 0.7",
    )
    parser.add_argument(
        "--model", type=model_config, required=True, help="a catalog model or a config.json path"
    )
    parser.add_argument("--gpu", type=gpu_name, required=True, help="a catalog GPU, e.g. h100-sxm")
    parser.add_argument("--tp", type=positive_int, default=1, help="GPUs in the replica (tensor parallel)")
    load = parser.add_mutually_exclusive_group(required=True)
    load.add_argument("--rate", type=positive_float, help="requests per second (Poisson arrivals)")
    load.add_argument("--concurrency", type=positive_int, help="requests kept in flight (a closed loop)")
    parser.add_argument("--prompt-len", type=positive_int, required=True, help="prompt tokens per request")
    parser.add_argument("--output-len", type=positive_int, required=True, help="output tokens per request")
    parser.add_argument("--precision", choices=serving.PRECISIONS, help="weights (default: the assumption)")
    parser.add_argument("--kv-cache-dtype", choices=("auto", "fp8"), default="auto", help="fp8: 1-byte KV")
    parser.add_argument("--engine", type=engine_name, help=ENGINE_HELP)
    parser.add_argument(
        "--num-requests", type=positive_int, help="requests simulated (default: the assumption)"
    )
    parser.add_argument("--seed", type=int, default=0, help="the Poisson arrivals' seed")
    parser.add_argument(
        "--chunked-prefill",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="cut prompts to the step's token budget (default: the assumption)",
    )
    parser.add_argument("--max-num-batched-tokens", type=positive_int, help="the step's token budget")
    parser.add_argument("--max-num-seqs", type=positive_int, help="sequences running at once at most")
    parser.add_argument("--block-size", type=positive_int, help="tokens per KV-cache block")
    parser.add_argument("--gpu-memory-utilization", type=fraction, help="share of memory vLLM takes")
    parser.add_argument("--prefix-hit", type=fraction, help="share of each prompt found in the prefix cache")
    parser.add_argument(
        "--spec-decode", type=positive_int, help="speculative decoding: tokens drafted a step"
    )
    parser.add_argument("--spec-acceptance", type=fraction, help="each drafted token's acceptance rate")
    parser.add_argument(
        "--spec-draft", type=model_config, help="the draft model (default: n-gram lookup, no draft cost)"
    )
    parser.add_argument("--slo-ttft-ms", type=positive_float, help="goodput's TTFT target (ms)")
    parser.add_argument("--slo-tpot-ms", type=positive_float, help="goodput's TPOT target (ms)")
    parser.add_argument("--json", action="store_true", help="print JSON: " + ", ".join(JSON_KEYS))
