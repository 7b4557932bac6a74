"""``lab-utils pick``: every CPU, GPU, serverless and API option for a job, ranked."""

from __future__ import annotations

import argparse

from lab_utils.cli.common import (
    ENGINE_HELP,
    MODEL_HELP,
    UsageError,
    add_command,
    answer_json,
    engine_name,
    fraction,
    model_name,
    non_negative_float,
    non_negative_int,
    positive_float,
    positive_int,
    print_assumptions,
)


def run(args: argparse.Namespace) -> int:
    """Rank every option for one job with ``lab_utils.advisor``: a table, or JSON with --json."""
    from lab_utils import advisor, serving

    need = {"fine-tune": ("tokens",), "serve": ("model", "requests_per_day"), "train": ("params", "examples")}
    missing = [f"--{name.replace('_', '-')}" for name in need[args.job] if getattr(args, name) is None]
    if args.job == "fine-tune" and args.model is None and args.params is None:
        missing.append("--model or --params")
    if missing:
        raise UsageError(f"pick {args.job} needs {', '.join(missing)}")
    if args.engine is not None and args.job != "serve":
        raise UsageError(f"argument --engine: pick {args.job} does not use it; it applies to serve")
    if args.job == "train" and bool(args.embedding_params) != bool(args.lookups):
        raise UsageError(
            "arguments --embedding-params and --lookups go together: give both (a sparse model) "
            "or neither (a dense one)"
        )
    if args.job == "fine-tune":
        advice = advisor.fine_tune(
            args.model or args.params,
            args.tokens,
            method=args.method,
            mfu=args.mfu,
            seq_len=args.seq_len,
            batch=args.batch,
        )
    elif args.job == "serve":
        if args.mfu is not None:
            raise UsageError(
                "argument --mfu: pick serve does not use it (serving bounds are timed through an "
                "engine's profile, --engine); it applies to fine-tune and train"
            )
        why = serving.sizable(args.model)
        if why:
            raise UsageError(f"argument --model: {why}")
        advice = advisor.serve(
            args.model,
            args.requests_per_day,
            input_tokens=args.input_tokens,
            output_tokens=args.output_tokens,
            latency_target_s=args.latency_s,
            precision=args.precision,
            engine=args.engine,
        )
    else:
        advice = advisor.train(
            args.params,
            args.examples,
            embedding_params=args.embedding_params,
            lookups_per_example=args.lookups,
            mfu=args.mfu,
        )
    advice = advice.ranked(args.rank_by)
    if not answer_json(args, advice.to_dict()):
        print(advice.table(limit=args.limit))
        print(advice.verdict.text())
        print_assumptions(advice.assumptions, args)  # the assumptions taken: values given are not among them
    return 0


def register(commands) -> None:
    from lab_utils import assumptions, serving

    parser = add_command(
        commands,
        "pick",
        run,
        help="rank every CPU, GPU, serverless and API option for a job by cost and time",
        examples="  lab-utils pick fine-tune --model llama-3.1-8b --tokens 1e8 --method lora\n"
        "  lab-utils pick serve --model llama-3.1-8b --requests-per-day 1000 --json\n"
        "  lab-utils pick fine-tune --model llama-3.1-8b --tokens 1e8 --rank-by energy\n"
        "  lab-utils pick train --params 2e7 --examples 1e9 --embedding-params 2e11 --lookups 40",
    )
    parser.add_argument("job", choices=("fine-tune", "serve", "train"))
    parser.add_argument("--model", type=model_name, help=MODEL_HELP)
    parser.add_argument(
        "--params", type=positive_float, help="parameters (fine-tune without --model; train: dense)"
    )
    parser.add_argument("--tokens", type=positive_float, help="fine-tune: training tokens, e.g. 1e8")
    parser.add_argument(
        "--method", choices=assumptions.FINE_TUNE_METHODS, help="fine-tune: default the assumption"
    )
    parser.add_argument("--requests-per-day", type=positive_float)
    parser.add_argument(
        "--input-tokens", type=positive_int, help="serve: prompt tokens (default: the assumption)"
    )
    parser.add_argument(
        "--output-tokens", type=positive_int, help="serve: answer tokens (default: the assumption)"
    )
    parser.add_argument(
        "--latency-s", type=positive_float, help="serve: latency target (default: the assumption)"
    )
    parser.add_argument(
        "--precision",
        choices=serving.PRECISIONS,
        help="serve: one precision for every GPU (default: each GPU at every precision that fits)",
    )
    parser.add_argument(
        "--seq-len", type=positive_int, help="fine-tune: tokens per sequence (default: the assumption)"
    )
    parser.add_argument(
        "--batch", type=positive_int, help="fine-tune: sequences per GPU (default: the assumption)"
    )
    parser.add_argument("--examples", type=positive_float, help="train: examples seen")
    parser.add_argument(
        "--embedding-params", type=non_negative_float, default=0.0, help="train: embedding values"
    )
    parser.add_argument(
        "--lookups", type=non_negative_int, default=0, help="train: embedding rows looked up per example"
    )
    parser.add_argument("--mfu", type=fraction, help="model FLOPs utilisation (default: the assumption)")
    parser.add_argument("--engine", type=engine_name, help=f"serve: {ENGINE_HELP}")
    parser.add_argument("--limit", type=positive_int, help="print only the first N options")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    parser.add_argument(
        "--rank-by",
        choices=("cost", "energy"),
        default="cost",
        help="order the options by dollars (default) or by estimated kWh, fewest first",
    )
