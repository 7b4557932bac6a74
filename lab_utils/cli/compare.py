"""``lab-utils compare``: the class roofline, many ``bench --json`` results on one figure."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from lab_utils.cli.bench import JSON_FORMAT, measured_roof
from lab_utils.cli.common import UsageError, add_command, device_name


def _read_text(path: str) -> str:
    """A file's text: UTF-16 when it starts with a byte-order mark (PowerShell 5's ``>``), else UTF-8."""
    data = Path(path).read_bytes()
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        return data.decode("utf-16")
    return data.decode("utf-8-sig")


def load_result(path: str) -> dict:
    """The data of a `lab-utils bench --json` file; ValueError saying in a few words what is wrong."""
    try:
        text = _read_text(path)
    except FileNotFoundError:
        raise ValueError("does not exist") from None
    except UnicodeDecodeError:
        raise ValueError("is not text (neither UTF-8 nor UTF-16)") from None
    except OSError as error:
        raise ValueError(f"cannot be read ({error.strerror})") from None
    if not text.strip():
        raise ValueError("is empty")
    try:
        data = json.loads(text)
    except ValueError:
        raise ValueError("is not JSON") from None
    if (
        not isinstance(data, dict)
        or data.get("format") != JSON_FORMAT
        or not isinstance(data.get("rows"), list)
    ):
        raise ValueError("is not the output of `lab-utils bench --json`")
    return data


def class_entry(path: str, data: dict):
    """The :class:`plots.ClassMachine` of one bench file: who sent it (the file's name), the
    device it reported, where it ran (cpu, cuda, mps), its matmul points and measured roof."""
    from lab_utils import plots, roofline

    device = data.get("machine", {}).get("device_name", "?")
    short = plots.short_device_name(device)
    try:
        rows = [r for r in data["rows"] if r["kind"] == "matmul"]
        points = tuple(
            roofline.Point(
                f"{short}, {r['dtype']} matmul (measured)",
                r["flops_per_call"] / r["bytes_per_call"],
                r["flops_per_s"],
            )
            for r in rows
        )
        roof = measured_roof(data["rows"], f"{short} (measured)")
    except (KeyError, TypeError, ZeroDivisionError) as error:
        raise ValueError(f"has a malformed row ({error!r})") from None
    return plots.ClassMachine(Path(path).stem, device, str(data.get("device", "?")), points, roof)


def _expand(patterns) -> list[str]:
    """Each RESULT as given, or the files its wildcard matches (PowerShell and cmd leave *.json as is)."""
    import glob

    paths = []
    for pattern in patterns:
        matches = sorted(glob.glob(pattern)) if glob.has_magic(pattern) and not Path(pattern).exists() else []
        paths += matches or [pattern]
    return paths


def run(args: argparse.Namespace) -> int:
    import matplotlib

    matplotlib.use("Agg")
    from lab_utils import plots

    machines, skipped = [], []
    for path in _expand(args.results):
        try:
            entry = class_entry(path, load_result(path))
        except ValueError as why:
            skipped.append(f"{path} {why}")
            continue
        machines.append(entry)
        print(
            f"{entry.learner}: {plots.short_device_name(entry.device)} ({entry.kind}"
            + (f", {entry.roof.dtype}), " if entry.roof else "), ")
            + f"{len(entry.points)} matmul point(s)"
            + ("" if entry.roof else " (no roof: too few cases)")
        )
    if not machines:
        raise UsageError("argument RESULT: nothing to draw: " + "; ".join(skipped))
    if len(machines) > plots.CLASS_MAX_MACHINES:
        raise UsageError(
            f"argument RESULT: {len(machines)} machines; the class roofline draws at most "
            f"{plots.CLASS_MAX_MACHINES} (split the room into groups)"
        )
    for line in skipped:
        print(f"skipped {line}")
    fig = plots.class_roofline(machines, devices=tuple(args.devices))
    args.output.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(args.output)
    skipped_note = f", {len(skipped)} file(s) skipped" if skipped else ""
    print(f"wrote {args.output} ({len(machines)} machine(s){skipped_note})")
    return 0


def register(commands) -> None:
    from lab_utils.roofline import DEFAULT_DEVICES

    parser = add_command(
        commands,
        "compare",
        run,
        help="draw the class roofline: many `bench --json` results on one figure beside catalog devices",
        examples="  lab-utils compare results/*.json   "
        "# the pattern is expanded here too (PowerShell does not)\n"
        "  lab-utils compare alice.json bob.json --output room.png --devices T4 'H100 SXM'",
    )
    parser.add_argument(
        "results", nargs="+", metavar="RESULT", help="files written by `lab-utils bench --json`"
    )
    parser.add_argument(
        "--output",
        type=Path,
        default=Path("class_roofline.png"),
        help="PNG to write (default class_roofline.png)",
    )
    parser.add_argument(
        "--devices",
        nargs="*",
        type=device_name,
        default=list(DEFAULT_DEVICES),
        help="catalog devices to draw",
    )
