"""``lab-utils bench``: time-boxed matmul and copy measurements, placed against catalog devices."""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from pathlib import Path

from lab_utils.cli.common import UsageError, add_command, positive_float, text_table

JSON_FORMAT = "lab-utils-bench"
JSON_VERSION = 1


def _progress_bar(stream=None):
    """A function for ``bench.sweep(progress=...)`` drawing one updating bar (tqdm) on stderr."""
    from tqdm import tqdm

    from lab_utils.units import format_bytes

    bar = None

    def draw(progress) -> None:
        nonlocal bar
        if bar is None:
            bar = tqdm(
                total=progress.total,
                file=stream or sys.stderr,
                unit="case",
                leave=True,
                bar_format="{l_bar}{bar}| {n}/{total} cases, {elapsed} {postfix}",
            )
        size = format_bytes(progress.size * 4) if progress.kind != "matmul" else f"n={progress.size}"
        bar.set_postfix_str(f"{progress.kind} {size} {progress.dtype}", refresh=False)
        bar.update(progress.done - bar.n)
        if progress.done == progress.total:
            bar.close()

    return draw


def measured_roof(rows: list[dict], label: str):
    """A :class:`roofline.Roof` from bench rows (dicts of ``BenchRow`` fields): best copy
    bytes/s and best matmul FLOP/s; None without both."""
    from lab_utils import roofline

    copies = [r for r in rows if r["kind"] == "copy"]
    products = [r for r in rows if r["kind"] == "matmul"]
    if not copies or not products:
        return None
    best = max(products, key=lambda r: r["flops_per_s"])
    return roofline.Roof(label, best["flops_per_s"], max(r["bytes_per_s"] for r in copies), best["dtype"])


def run(args: argparse.Namespace) -> int:
    from lab_utils import bench, hardware, machine, roofline
    from lab_utils.units import format_rate

    if args.device == "cuda":
        import torch

        if not torch.cuda.is_available():
            raise UsageError(
                "argument --device: 'cuda' asked for, but torch sees no CUDA GPU; use --device cpu"
            )
    device = args.device or str(machine.pick_device())
    table = bench.sweep(
        device=device, dtypes=tuple(args.dtypes), budget_s=args.seconds, progress=_progress_bar()
    )
    report = machine.describe()
    rows = [dataclasses.asdict(r) for r in table.rows]
    result = {
        "format": JSON_FORMAT,
        "version": JSON_VERSION,
        "machine": dataclasses.asdict(report),
        "device": table.device,
        "budget_s": table.budget_s,
        "elapsed_s": table.elapsed_s,
        "rows": rows,
        "skipped": [dataclasses.asdict(s) for s in table.skipped],
    }
    if (
        args.output is not None
    ):  # UTF-8 whatever the shell: no redirection needed (PowerShell's > writes UTF-16)
        args.output.parent.mkdir(parents=True, exist_ok=True)
        args.output.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    elif args.json:
        json.dump(result, sys.stdout, indent=1)
        print()
        for skipped in table.skipped:  # on stderr, so that the JSON on stdout stays clean
            print(skipped.describe(), file=sys.stderr)
        return 0
    print(table)
    if args.output is not None:
        print(f"wrote {args.output} (for lab-utils compare)")
    roof = measured_roof(rows, f"{report.device_name} (measured here)")
    if roof is None:
        print("Too few cases ran for a roofline: give more --seconds.")
        return 0
    print(
        f"\nThis machine, measured here: {format_rate(roof.peak_flops, 'FLOP/s')} ({roof.dtype} matmul), "
        f"{format_rate(roof.bandwidth_bytes_per_s, 'B/s')} copy; ridge point "
        f"{roof.peak_flops / roof.bandwidth_bytes_per_s:.1f} FLOP/byte"
    )
    print(f"Catalog devices (vendor specification), each at its {roof.dtype} peak, like the measurement:")
    rows = []
    for name in roofline.DEFAULT_DEVICES:
        spec = hardware.get(name)
        bandwidth = (
            format_rate(spec.bandwidth_bytes_per_s, "B/s"),
            f"{spec.bandwidth_bytes_per_s / roof.bandwidth_bytes_per_s:.1f}x",
        )
        if roof.dtype not in spec.peak_flops:
            rows.append(
                (name, f"no {roof.dtype} peak in the catalog", roof.dtype, bandwidth[0], "-", bandwidth[1])
            )
            continue
        other = roofline.roof_of(spec, roof.dtype)
        rows.append(
            (
                name,
                format_rate(other.peak_flops, "FLOP/s"),
                other.dtype,
                bandwidth[0],
                f"{other.peak_flops / roof.peak_flops:.1f}x",
                bandwidth[1],
            )
        )
    print(
        text_table(
            rows,
            ("device", "peak", "dtype", "bandwidth", "x the FLOP/s", "x the bandwidth"),
            ("left", "right", "left", "right", "right", "right"),
        )
    )
    return 0


def register(commands) -> None:
    parser = add_command(
        commands,
        "bench",
        run,
        help="time-boxed matmul and copy-bandwidth measurements, placed against catalog devices",
        examples="  lab-utils bench --seconds 10\n  lab-utils bench --device cuda --dtypes fp32 bf16\n"
        "  lab-utils bench --output alice.json   # for lab-utils compare (any shell)",
    )
    parser.add_argument("--device", choices=("cpu", "cuda"), help="default: the GPU when there is one")
    parser.add_argument("--seconds", type=positive_float, default=20.0, help="time budget (default 20)")
    parser.add_argument(
        "--dtypes",
        nargs="+",
        default=["fp32"],
        choices=("fp32", "tf32", "bf16", "fp16"),
        help="matmul dtypes (default fp32)",
    )
    output = parser.add_mutually_exclusive_group()
    output.add_argument(
        "--json", action="store_true", help="print the machine report and every row as JSON on stdout"
    )
    output.add_argument(
        "--output",
        type=Path,
        metavar="FILE",
        help="also write that JSON to FILE, in UTF-8 (for lab-utils compare; no redirection needed)",
    )
