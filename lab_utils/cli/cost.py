"""``lab-utils cost``: a fine-tune's cost, serving cost per 1M tokens, API vs self-host."""

from __future__ import annotations

import argparse
import dataclasses
import json

from lab_utils.cli.common import (
    ENGINE_HELP,
    MODEL_HELP,
    UsageError,
    add_command,
    answer_json,
    engine_name,
    fmt_money,
    fraction,
    gpu_name,
    model_name,
    non_negative_float,
    non_negative_int,
    positive_float,
    positive_int,
    print_assumptions,
    text_table,
    usage_error,
)


def run_fine_tune(args: argparse.Namespace) -> int:
    from lab_utils import assumptions, economics, hardware
    from lab_utils.units import format_bytes

    spec = hardware.get(assumptions.resolve(default_gpu=args.gpu)[0]["default_gpu"])
    if args.dtype is not None and args.dtype not in spec.peak_flops:
        raise UsageError(
            f"argument --dtype: {spec.name} has no {args.dtype} peak in the catalog; "
            f"it has {', '.join(spec.peak_flops)}"
        )
    try:
        estimate = economics.fine_tune_estimate(
            args.model,
            args.tokens,
            method=args.method,
            gpu=args.gpu,
            mfu=args.mfu,
            usd_per_gpu_hour=args.price_per_gpu_hour,
            dtype=args.dtype,
            seq_len=args.seq_len,
            batch=args.batch,
            lora_rank=args.lora_rank,
        )
    except economics.DoesNotFit as why:  # a GPU too small at any count: an answer, in one line
        raise UsageError(str(why)) from None
    data = {
        **dataclasses.asdict(estimate),
        "gpu_hours": estimate.gpu_hours,
        "cost_usd": estimate.cost_usd,
        "assumptions": dict(estimate.assumptions),
    }
    if answer_json(args, data):
        return 0
    cost = (
        "no price for this GPU in the data: give --price-per-gpu-hour"
        if estimate.cost_usd is None
        else fmt_money(estimate.cost_usd)
    )
    price = "-" if estimate.usd_per_gpu_hour is None else f"${estimate.usd_per_gpu_hour:.2f} per GPU-hour"
    servers = f" ({estimate.n_nodes} servers)" if estimate.n_nodes > 1 else ""
    print(
        f"{estimate.model}, {estimate.method} on {estimate.n_tokens:.3g} tokens, "
        f"{estimate.n_gpus} x {estimate.gpu}{servers} at MFU {estimate.mfu:g} of the {estimate.dtype} peak"
    )
    print(
        text_table(
            [
                (
                    "compute",
                    f"{estimate.flops:.3g} model FLOP ({estimate.attention_flops / estimate.flops:.0%} "
                    f"attention); the GPUs execute {estimate.hardware_flops:.3g} "
                    f"(recomputation), HFU {estimate.hfu:.2f}",
                ),
                ("memory", format_bytes(estimate.memory_bytes, binary=False) + _held(estimate)),
                (
                    "time",
                    f"{estimate.hours:.3g} h wall clock, {estimate.gpu_hours:.3g} GPU-hours, "
                    f"{estimate.run.bound} bound" + _exchanges(estimate.run),
                ),
                ("price", f"{price} ({estimate.price_source})"),
                ("cost", cost),
            ]
        )
    )
    print_assumptions(estimate.assumptions, args)
    return 0


def _held(estimate) -> str:
    """': N x GPU hold it, rented as a server of M' where renting rounds the count up."""
    needed = estimate.gpus_needed
    if needed is None or needed == 1 and estimate.n_gpus == 1:
        return ""
    rented = "" if needed == estimate.n_gpus else f"; rented as {estimate.n_gpus} (a server shape)"
    return f": {needed} x {estimate.gpu} hold it{rented}"


def _exchanges(run) -> str:
    """'; the GPUs' exchanges N h' when they exchange data, and what could not be timed."""
    said = f"; the GPUs' exchanges {run.communication_hours:.3g} h" if run.communication_hours else ""
    return said + "".join(f" ({note})" for note in run.notes)


def run_serve(args: argparse.Namespace) -> int:
    from lab_utils import assumptions, economics, hardware, serving

    price, tokens_per_s = args.price_per_hour, args.tokens_per_s
    taken, lines, result = {}, [], {}
    if args.model is not None:
        why = serving.sizable(args.model)
        if why:
            raise UsageError(f"argument --model: {why}")
        values, taken = assumptions.resolve(
            precision__inference=args.precision,
            input_tokens=args.input_tokens,
            output_tokens=args.output_tokens,
            serve_batch=args.batch,
            default_gpu=args.gpu,
            engine=args.engine,
        )
        args.gpu = values["default_gpu"]
        precision, batch = values["precision.inference"], values["serve_batch"]
        prompt_len, output_len = max(1, values["input_tokens"]), values["output_tokens"]
        shape = dict(
            device=hardware.get(args.gpu),
            prompt_len=prompt_len,
            output_len=output_len,
            precision=precision,
            efficiency=args.efficiency,  # None: 1, the engine's profile alone (basics.engine_efficiency)
            usd_per_hour=price,
            engine=args.engine,
        )
        room = serving.max_batch(
            args.model, device=shape["device"], context_len=prompt_len + output_len, precision=precision
        )
        if room == 0:
            fitting = [
                p
                for p in serving.PRECISIONS[serving.PRECISIONS.index(precision) + 1 :]
                if serving.max_batch(
                    args.model, device=shape["device"], context_len=prompt_len + output_len, precision=p
                )
            ]
            hint = (
                f"; it fits in {' or '.join(fitting)} (--precision {fitting[0]}, the best of them), "
                "the way such models are "
                "served on small cards"
                if fitting
                else "; no precision fits: use a larger GPU"
            )
            raise UsageError(
                f"argument --model: {args.model} in {precision} does not fit on one {args.gpu} "
                f"beside one request's KV cache{hint}"
            )
        if batch > room:
            raise UsageError(
                f"argument --batch: {batch} sequences of {prompt_len + output_len} tokens do not "
                f"fit on one {args.gpu} beside the weights; at most {room}"
            )
        estimate = serving.estimate(args.model, batch=batch, **shape)
        if estimate.usd_per_hour is None:
            raise UsageError(f"argument --gpu: no price for {args.gpu} in the data; give --price-per-hour")
        if args.engine is None:
            taken["engine"] = estimate.engine  # the device's entry of the rule
        if price is None:
            taken["price_rule"] = assumptions.device_price(shape["device"]).offer
        result = {
            **dataclasses.asdict(estimate),
            "max_batch": room,
            "usd_per_million_output_tokens": estimate.usd_per_million_output_tokens,
        }
        lines += [
            f"{estimate.model} in {estimate.precision} ({estimate.compute_dtype} compute) on one "
            f"{estimate.device}, batch {estimate.batch} (room for {room}), {prompt_len} tokens in + "
            f"{output_len} out per request; serving bounds through the engine {estimate.engine}"
            + ("" if args.efficiency is None else f" x efficiency {args.efficiency:g}")
            + f", limited by {estimate.limit}",
            *(f"  ({note})" for note in estimate.engine_notes),
            f"  KV cache: {estimate.kv_layout}",
            *([f"  routing: {estimate.routing}"] if estimate.routing else []),
            text_table(
                [
                    ("time to first token", f"{estimate.ttft_s * 1e3:,.1f} ms"),
                    ("time per output token", f"{estimate.tpot_s * 1e3:,.2f} ms"),
                    ("request in a full batch", f"{estimate.latency_s:,.2f} s"),
                    ("tokens/s (in + out)", f"{estimate.tokens_per_s:,.0f}"),
                    ("generated tokens/s", f"{estimate.output_tokens_per_s:,.0f}"),
                    ("price", f"${estimate.usd_per_hour:.2f}/h ({estimate.price_source})"),
                ]
            ),
            f"  {fmt_money(estimate.usd_per_million_output_tokens)} per 1M generated tokens",
        ]
        price, tokens_per_s = estimate.usd_per_hour, estimate.tokens_per_s
    elif price is None or tokens_per_s is None:
        raise UsageError("arguments --price-per-hour and --tokens-per-s are both needed without --model")
    else:
        lines.append(f"  ${price:.2f}/h at {tokens_per_s:,.0f} tokens/s")
    result["usd_per_million_tokens"] = economics.cost_per_million_tokens(price, tokens_per_s)
    lines.append(
        f"  {fmt_money(result['usd_per_million_tokens'])} per 1M tokens (fully busy; idle time costs extra)"
    )
    advice = _at_load(args) if args.requests_per_day is not None else None
    if advice is not None:
        result["at_load"] = advice.to_dict()
    if args.curve:
        result["curve"] = _curve(args)
        lines.append(_curve_table(result["curve"]))
    if answer_json(args, {**result, "assumptions": taken}):
        return 0
    print("\n".join(lines))
    print_assumptions(taken, args)
    if advice is not None:
        gpu = hardware.get(args.gpu).name
        print(
            f"\nAt {args.requests_per_day:,.0f} requests a day "
            "(lab_utils.advisor, as `lab-utils pick serve`):"
        )
        for option in advice.options:
            if option.kind == "gpu" and option.device == gpu:
                cost = (
                    "no price" if option.cost_per_month_usd is None else fmt_money(option.cost_per_month_usd)
                )
                print(
                    f"  {option.name} ({option.precision}): {cost} per month"
                    + (f"; cannot: {option.why}" if option.why else "")
                )
        print(f"  {advice.verdict}")
    return 0


def _curve(args: argparse.Namespace) -> dict:
    """``--curve``: the month on ``--gpu`` at 10 to 10^6 requests a day, a decade apart (and at
    ``--requests-per-day``), always on, serverless and per token (``widgets.cost_curves``, the
    notebooks' cost calculator, through the advisor), as {"gpu", "requests_per_day", "lines":
    {way: [[requests per day, dollars per month], ...]}}."""
    from lab_utils import widgets

    if args.model is None:
        raise UsageError("argument --curve needs --model")
    grid = widgets.REQUESTS_PER_DAY_GRID[::2] + ((args.requests_per_day,) if args.requests_per_day else ())
    curves = widgets.cost_curves(
        args.model,
        args.gpu,
        method="inference",
        batch=args.batch,
        input_tokens=args.input_tokens,
        output_tokens=args.output_tokens,
        efficiency=args.efficiency,
        requests_per_day_grid=grid,
    )
    return {
        "gpu": curves["gpu"],
        "requests_per_day": args.requests_per_day,
        "lines": {
            way: [[volume, usd] for volume, _, usd in points] for way, points in curves["lines"].items()
        },
    }


def _curve_table(curve: dict) -> str:
    """The curve as text: one row per volume, one column of dollars per month per way."""
    ways = list(curve["lines"])
    volumes = sorted({volume for points in curve["lines"].values() for volume, _ in points})
    month = {(way, volume): usd for way in ways for volume, usd in curve["lines"][way]}
    rows = [
        (
            f"{volume:,.0f}",
            *(fmt_money(month[way, volume]) if (way, volume) in month else "-" for way in ways),
        )
        for volume in volumes
    ]
    return f"\nA month on {curve['gpu']} by requests a day (lab_utils.widgets.cost_curves):\n" + text_table(
        rows, ("requests/day", *ways), ("right",) * (len(ways) + 1)
    )


def _at_load(args: argparse.Namespace):
    """The month at ``--requests-per-day``: the advisor's answer (the one engine behind ``pick``)."""
    from lab_utils import advisor

    if args.model is None:
        raise UsageError("argument --requests-per-day needs --model")
    return advisor.serve(
        args.model,
        args.requests_per_day,
        input_tokens=args.input_tokens,
        output_tokens=args.output_tokens,
        precision=args.precision,
        efficiency=args.efficiency,
        engine=args.engine,
    )


def run_breakeven(args: argparse.Namespace) -> int:
    from lab_utils import assumptions, economics

    values, taken = assumptions.resolve(amortize_months=args.amortize_months)
    if not args.fine_tune_cost:
        taken = {}  # nothing to spread: the months do not matter
    tokens = economics.breakeven_tokens_per_month(
        api_cost_per_million=args.api_per_million,
        usd_per_hour=args.price_per_hour,
        tokens_per_s=args.tokens_per_s,
        fine_tune_cost=args.fine_tune_cost,
        amortize_months=values["amortize_months"],
        always_on=args.always_on,
    )
    way = "always on" if args.always_on else "pay per use"
    never = tokens == float("inf")
    if args.json:
        print(
            json.dumps(
                {
                    "way": way,
                    "breakeven_tokens_per_month": None if never else tokens,
                    "never": never,
                    "api_cost_per_million": args.api_per_million,
                    "usd_per_hour": args.price_per_hour,
                    "tokens_per_s": args.tokens_per_s,
                    "fine_tune_cost_usd": args.fine_tune_cost,
                    "amortize_months": values["amortize_months"],
                    "assumptions": taken,
                },
                indent=2,
            )
        )
        return 0
    if never:
        print(f"Self-hosting ({way}) never costs less than the API at these prices.")
    else:
        print(
            f"Self-hosting ({way}) costs no more than the API from {tokens:,.0f} tokens per month "
            f"({tokens / 1e6:,.1f}M)."
        )
    print(
        "(a GPU fully busy at --tokens-per-s whenever billed: no cold start, no idle time; "
        "for a model's real traffic ask `lab-utils pick serve`)"
    )
    print_assumptions(taken, args)
    return 0


def register(commands) -> None:
    from lab_utils import assumptions, serving

    parser = add_command(
        commands,
        "cost",
        lambda args: usage_error(parser, "choose a cost: fine-tune, serve or breakeven"),
        help="fine-tune cost, serving cost per 1M tokens, API vs self-host break-even",
        examples="  lab-utils cost fine-tune --model llama-3.1-8b --tokens 1e8 --method lora --gpu h100\n"
        "  lab-utils cost serve --price-per-hour 2.5 --tokens-per-s 1500\n"
        "  lab-utils cost serve --model llama-3.1-8b --gpu 'RTX 4090' --batch 32\n"
        "  lab-utils cost breakeven --api-per-million 0.6 --price-per-hour 2.5 --tokens-per-s 1500",
    )
    costs = parser.add_subparsers(dest="cost", metavar="COST")
    fine = add_command(
        costs,
        "fine-tune",
        run_fine_tune,
        help="hours, GPUs and dollars for one fine-tune",
        examples="  lab-utils cost fine-tune --model llama-3.1-8b --tokens 1e8\n"
        "  lab-utils cost fine-tune --model llama-3.1-8b --tokens 1e8 --gpu T4\n"
        "  lab-utils cost fine-tune --model llama-3.1-8b --tokens 1e9 --method full "
        "--gpu 'H100 SXM' --price-per-gpu-hour 3",
    )
    fine.add_argument("--model", type=model_name, required=True, help=MODEL_HELP)
    fine.add_argument("--tokens", type=positive_float, required=True, help="training tokens, e.g. 1e8")
    fine.add_argument("--method", choices=assumptions.FINE_TUNE_METHODS, help="default: the assumption")
    fine.add_argument("--gpu", type=gpu_name, help="a catalog GPU (default: the assumption)")
    fine.add_argument("--mfu", type=fraction, help="model FLOPs utilisation (default: the assumption)")
    fine.add_argument(
        "--dtype",
        choices=("fp32", "tf32", "bf16", "fp16", "fp8"),
        help="the peak to compute at (default: bf16 where the GPU has it, else fp16)",
    )
    fine.add_argument("--seq-len", type=positive_int, help="tokens per sequence (default: the assumption)")
    fine.add_argument(
        "--batch", type=positive_int, help="sequences per GPU per step (default: the assumption)"
    )
    fine.add_argument("--lora-rank", type=positive_int, help="LoRA rank (default: the assumption)")
    fine.add_argument(
        "--price-per-gpu-hour",
        type=non_negative_float,
        help="default: the cheapest rentable offer for that GPU in the price catalog",
    )
    fine.add_argument("--json", action="store_true", help="print JSON instead of a table")
    serve = add_command(
        costs,
        "serve",
        run_serve,
        help="TTFT, TPOT, tokens/s and dollars per 1M tokens on a GPU",
        examples="  lab-utils cost serve --price-per-hour 2.5 --tokens-per-s 1500\n"
        "  lab-utils cost serve --model llama-3.1-8b --gpu 'RTX 4090' --batch 8",
    )
    serve.add_argument(
        "--price-per-hour",
        type=non_negative_float,
        help="with --model: default the GPU's cheapest rentable offer",
    )
    serve.add_argument("--tokens-per-s", type=positive_float)
    serve.add_argument(
        "--model",
        type=model_name,
        help="estimate TTFT, TPOT and tokens/s from the serving bounds (lab_utils.serving)",
    )
    serve.add_argument("--gpu", type=gpu_name, help="a catalog GPU (default: the assumption)")
    serve.add_argument(
        "--precision",
        choices=serving.PRECISIONS,
        help="weights, KV cache and compute together (default: the assumption)",
    )
    serve.add_argument(
        "--batch", type=positive_int, help="sequences decoded at once (default: the assumption)"
    )
    serve.add_argument(
        "--requests-per-day",
        type=positive_float,
        help="also price a month at this load, with the advisor's verdict (as pick serve)",
    )
    serve.add_argument(
        "--curve",
        action="store_true",
        help="with --model: also the month at 10 to 10^6 requests a day (and --requests-per-day), "
        "the GPU always on, its serverless class and per token",
    )
    serve.add_argument("--json", action="store_true", help="print JSON instead of a table")
    serve.add_argument(
        "--input-tokens", type=non_negative_int, help="prompt tokens (default: the assumption)"
    )
    serve.add_argument("--output-tokens", type=positive_int, help="answer tokens (default: the assumption)")
    serve.add_argument(
        "--efficiency",
        type=fraction,
        help="an extra factor on the engine's times (default 1: the engine's profile alone)",
    )
    serve.add_argument("--engine", type=engine_name, help=ENGINE_HELP)
    even = add_command(
        costs,
        "breakeven",
        run_breakeven,
        help="tokens per month above which self-hosting costs no more than the API",
        examples="  lab-utils cost breakeven --api-per-million 0.6 --price-per-hour 2.5 "
        "--tokens-per-s 1500\n"
        "  lab-utils cost breakeven --api-per-million 3 --price-per-hour 2.5 "
        "--tokens-per-s 1500 --fine-tune-cost 500 --always-on",
    )
    even.add_argument("--api-per-million", type=non_negative_float, required=True, help="API $ per 1M tokens")
    even.add_argument("--price-per-hour", type=non_negative_float, required=True, help="GPU $ per hour")
    even.add_argument(
        "--tokens-per-s", type=positive_float, required=True, help="self-hosted tokens/s per GPU"
    )
    even.add_argument("--fine-tune-cost", type=non_negative_float, default=0.0)
    even.add_argument(
        "--amortize-months",
        type=positive_float,
        help="months to spread the fine-tune over (default: the assumption)",
    )
    even.add_argument("--always-on", action="store_true", help="bill whole GPUs all month")
    even.add_argument("--json", action="store_true", help="print JSON instead of a sentence")
