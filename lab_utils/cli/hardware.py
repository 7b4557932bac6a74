"""``lab-utils hardware``: the hardware catalog, or one device with its sources."""

from __future__ import annotations

import argparse
import dataclasses

from lab_utils.cli.common import add_command, device_name, text_table


def run(args: argparse.Namespace) -> int:
    from lab_utils import hardware
    from lab_utils.units import GB_DEFINITION, format_bytes, format_rate

    if args.name is None:
        rows = [
            (
                spec.name,
                spec.kind,
                format_bytes(spec.memory_bytes) if spec.memory_bytes else "-",
                format_rate(spec.bandwidth_bytes_per_s, "B/s") if spec.bandwidth_bytes_per_s else "-",
                spec.source_date,
            )
            for spec in hardware.catalog(args.kind)
        ]
        print(
            text_table(
                rows,
                ("name", "kind", "memory", "bandwidth", "source date"),
                ("left", "left", "right", "right", "left"),
            )
        )
        print(
            f"vendor specifications (memory in {GB_DEFINITION}); `lab-utils hardware NAME` shows one device "
            "with its source"
        )
        return 0
    spec = hardware.get(args.name)
    rows = []
    for field in dataclasses.fields(spec):
        value = getattr(spec, field.name)
        if field.name == "peak_flops":
            value = ", ".join(f"{k} {format_rate(v, 'FLOP/s')}" for k, v in value.items()) or None
        elif field.name == "l2_bytes" and value:  # whitepapers give caches in binary units
            value = f'{format_bytes(value)} ({format_bytes(value, binary=True)}, the whitepaper\'s "MB")'
        elif field.name.endswith("_bytes") and value:
            value = format_bytes(value)
        elif field.name == "bandwidth_bytes_per_s" and value:
            value = format_rate(value, "B/s")
        elif field.name == "aliases":
            value = ", ".join(value) or None
        rows.append((field.name, "-" if value is None else value))
    print(text_table(rows))
    print(f"memory in {GB_DEFINITION}")
    return 0


def register(commands) -> None:
    parser = add_command(
        commands,
        "hardware",
        run,
        help="list the hardware catalog, or show one device with every figure, source and date",
        examples="  lab-utils hardware\n  lab-utils hardware --kind gpu\n  lab-utils hardware h100",
    )
    parser.add_argument(
        "name", nargs="?", type=device_name, help="a device name or alias (forgiving: h100, 'H100 SXM')"
    )
    parser.add_argument("--kind", choices=("gpu", "cpu"), help="list only GPUs or only CPUs")
