"""The ``lab-utils`` command line: the course's helpers without opening a notebook.

Each sub-command is registered by one small ``_add_<name>(commands)`` function listed in
:data:`COMMANDS`; adding a command is adding one such function. Bad usage or input (argparse's
own checks, the ``checks`` and catalog lookups run while parsing, or a :class:`UsageError`)
prints one line on stderr and exits with status 2. Any other exception is a bug in lab-utils:
its traceback, a line saying so, exit status 1. Answers end with the assumptions they took
(``lab_utils.assumptions``), each with the option that overrides it. ``memory``, ``cost`` and
``hardware`` import no torch.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import shutil
import sys
import traceback
from pathlib import Path

import lab_utils

DISTRIBUTION = "cpu-vs-gpu-course"  # pip's name for the course (PyPI's "lab-utils" is another project)
JSON_FORMAT = "lab-utils-bench"
JSON_VERSION = 1
MIN_RAM_BYTES = 4e9
"""Below this the larger notebook experiments may not fit (Colab's CPU runtime has ~12.7 GB)."""
MIN_FREE_DISK_BYTES = 1.5e9
"""The README's disk need for the course and its environment."""


class UsageError(Exception):
    """Bad usage found after parsing; the message names the argument and what is allowed."""


def _usage_error(parser: argparse.ArgumentParser, message: str):
    """One line on stderr, exit status 2 (argparse's convention for bad usage)."""
    parser.exit(2, f"{parser.prog}: error: {' '.join(str(message).split())}\n")


class _Parser(argparse.ArgumentParser):
    """argparse with bad usage on one line: which argument, what is allowed, where help is."""

    def error(self, message: str):
        _usage_error(self, f"{message} (see {self.prog} --help)")


def _formatter(prog: str) -> argparse.HelpFormatter:
    return argparse.RawDescriptionHelpFormatter(prog, max_help_position=32)


def _add_command(commands, name: str, run, *, help: str, examples: str):  # noqa: A002 - argparse's name
    parser = commands.add_parser(
        name,
        help=help,
        description=help[0].upper() + help[1:] + ".",
        epilog="examples:\n" + examples,
        formatter_class=_formatter,
    )
    parser.set_defaults(run=run)
    return parser


def _argument(convert, check, **limits):
    """An argparse type: ``convert`` the text (float or int), then a ``lab_utils.checks``
    function with ``limits``; argparse names the option in its one-line error."""

    def parse(text: str):
        from lab_utils import checks

        try:
            value = convert(text)
        except ValueError:
            wanted = "whole number" if convert is int else "number (write e.g. 8e9)"
            raise argparse.ArgumentTypeError(f"{text!r} is not a {wanted}") from None
        try:
            return getattr(checks, check)("value", value, **limits)
        except (TypeError, ValueError) as error:
            raise argparse.ArgumentTypeError(
                f"{text!r}{str(error).removeprefix(f'value={value!r}')}"
            ) from None

    return parse


_positive_float = _argument(float, "number")
_non_negative_float = _argument(float, "number", strict=False)
_positive_int = _argument(int, "count")
_fraction = _argument(float, "number", maximum=1.0)
_non_negative_int = _argument(int, "count", minimum=0)


def _fmt_money(dollars: float) -> str:
    return "never" if dollars == float("inf") else f"${dollars:,.2f}"


# --- doctor ----------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Finding:
    """One thing ``doctor`` found: ``fatal`` when the course cannot run until it is fixed."""

    fatal: bool
    problem: str
    fix: str


def nvidia_gpu_present() -> bool:
    """Whether this machine has an NVIDIA GPU, whatever torch sees: a PCI device with NVIDIA's
    vendor id 0x10de (Linux), or nvidia-smi on the PATH (it comes with the driver, on Windows too)."""
    for vendor in Path("/sys/bus/pci/devices").glob("*/vendor"):
        try:
            if vendor.read_text().strip() == "0x10de":
                return True
        except OSError:
            continue
    return shutil.which("nvidia-smi") is not None


def doctor_findings(
    report, *, installed: dict[str, bool], free_disk_bytes: float, nvidia_gpu: bool
) -> list[Finding]:
    """What to fix on a machine, from its ``machine.describe()`` report, which optional
    packages are importable (``installed``: name -> bool), the free disk in bytes and whether
    the machine has an NVIDIA GPU at all (``nvidia_gpu``, e.g. :func:`nvidia_gpu_present`)."""
    from lab_utils.units import format_bytes

    found = []
    if not report.cuda_available:
        if report.cuda_version and not nvidia_gpu:
            found.append(
                Finding(
                    False,
                    f"PyTorch is a CUDA {report.cuda_version} build, and this machine has no "
                    "NVIDIA GPU: the course runs on the CPU",
                    "nothing to fix; the CPU build of torch is much smaller: pip install torch "
                    "--index-url https://download.pytorch.org/whl/cpu",
                )
            )
        elif report.cuda_version:
            found.append(
                Finding(
                    False,
                    f"PyTorch is a CUDA {report.cuda_version} build but sees no GPU",
                    "install or update the NVIDIA driver (nvidia-smi must work), or use a "
                    "CPU build of torch; the course runs on the CPU meanwhile",
                )
            )
        else:
            found.append(
                Finding(
                    False,
                    "no GPU: GPU sections will show catalog reference figures",
                    "for live GPU numbers switch Colab to a T4 runtime (Runtime > Change "
                    "runtime type) or start a Runpod pod (see the Setup page)",
                )
            )
    if not installed.get("ipywidgets", False):
        found.append(
            Finding(
                True,
                "ipywidgets is missing: the notebooks' sliders will not work",
                "pip install 'ipywidgets>=7.7' (make setup installs it)",
            )
        )
    if report.runtime == "local" and not installed.get("jupyterlab_widgets", False):
        found.append(
            Finding(
                False,
                "the Jupyter widget extension (jupyterlab_widgets) is missing",
                "pip install jupyterlab_widgets, or run `make lab`, then restart JupyterLab",
            )
        )
    if report.ram_bytes < MIN_RAM_BYTES:
        found.append(
            Finding(
                True,
                f"only {format_bytes(report.ram_bytes)} of RAM; the course needs "
                f"{format_bytes(MIN_RAM_BYTES)}",
                "use a machine with more memory, or Colab",
            )
        )
    if free_disk_bytes < MIN_FREE_DISK_BYTES:
        found.append(
            Finding(
                True,
                f"only {format_bytes(free_disk_bytes)} of free disk; the course needs "
                f"{format_bytes(MIN_FREE_DISK_BYTES)}",
                "free some disk space, or use Colab",
            )
        )
    return found


def course_version() -> str:
    """The installed course's distribution and version, or where lab_utils is imported from."""
    from importlib import metadata

    try:
        return f"{DISTRIBUTION} {metadata.version(DISTRIBUTION)}"
    except metadata.PackageNotFoundError:
        return f"{DISTRIBUTION} not installed; lab_utils imported from {Path(__file__).resolve().parent}"


def _doctor(args: argparse.Namespace) -> int:
    import importlib.util

    try:
        from lab_utils import machine

        report = machine.describe()
    except ImportError as error:
        print(f"cannot describe this machine: {error}")
        print("FIX: install the course (make setup, or pip install -e .) so that torch imports")
        print("The course cannot run here yet.")
        return 1
    from lab_utils.units import format_bytes

    print(report)
    installed = {
        name: importlib.util.find_spec(name) is not None for name in ("ipywidgets", "jupyterlab_widgets")
    }
    free_disk_bytes = shutil.disk_usage(os.getcwd()).free
    print(f"{'Course':<20}{course_version()}")
    print(f"{'Free disk':<20}{format_bytes(free_disk_bytes)} here ({os.getcwd()})")
    found = doctor_findings(
        report, installed=installed, free_disk_bytes=free_disk_bytes, nvidia_gpu=nvidia_gpu_present()
    )
    print()
    for finding in found:
        print(f"{'FIX ' if finding.fatal else 'NOTE'}: {finding.problem}\n      -> {finding.fix}")
    if any(f.fatal for f in found):
        print("The course cannot run here until the FIX lines are done.")
        return 1
    print("The course can run here.")
    return 0


def _add_doctor(commands) -> None:
    _add_command(
        commands,
        "doctor",
        _doctor,
        help="report this machine and what to fix; exit 0 when the course can run, 1 when not",
        examples="  lab-utils doctor\n  lab-utils doctor && echo ready",
    )


# --- bench -----------------------------------------------------------------------------------


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


def _bench(args: argparse.Namespace) -> int:
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
        _table(
            rows,
            ("device", "peak", "dtype", "bandwidth", "x the FLOP/s", "x the bandwidth"),
            ("left", "right", "left", "right", "right", "right"),
        )
    )
    return 0


def _add_bench(commands) -> None:
    parser = _add_command(
        commands,
        "bench",
        _bench,
        help="time-boxed matmul and copy-bandwidth measurements, placed against catalog devices",
        examples="  lab-utils bench --seconds 10\n  lab-utils bench --device cuda --dtypes fp32 bf16\n"
        "  lab-utils bench --output alice.json   # for lab-utils compare (any shell)",
    )
    parser.add_argument("--device", choices=("cpu", "cuda"), help="default: the GPU when there is one")
    parser.add_argument("--seconds", type=_positive_float, default=20.0, help="time budget (default 20)")
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


# --- compare ---------------------------------------------------------------------------------


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


def _compare(args: argparse.Namespace) -> int:
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


def _add_compare(commands) -> None:
    from lab_utils.roofline import DEFAULT_DEVICES

    parser = _add_command(
        commands,
        "compare",
        _compare,
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
        type=_device_name,
        default=list(DEFAULT_DEVICES),
        help="catalog devices to draw",
    )


# --- hardware --------------------------------------------------------------------------------


def _hardware(args: argparse.Namespace) -> int:
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
            _table(
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
    print(_table(rows))
    print(f"memory in {GB_DEFINITION}")
    return 0


def _add_hardware(commands) -> None:
    parser = _add_command(
        commands,
        "hardware",
        _hardware,
        help="list the hardware catalog, or show one device with every figure, source and date",
        examples="  lab-utils hardware\n  lab-utils hardware --kind gpu\n  lab-utils hardware h100",
    )
    parser.add_argument(
        "name", nargs="?", type=_device_name, help="a device name or alias (forgiving: h100, 'H100 SXM')"
    )
    parser.add_argument("--kind", choices=("gpu", "cpu"), help="list only GPUs or only CPUs")


# --- inputs that name things: checked while parsing, so a bad one is a usage error ---------------


def _catalog_name(lookup, what: str):
    """An argparse type: the catalog's own name for the text (``lookup(text).name``)."""

    def parse(text: str) -> str:
        try:
            return lookup(text).name
        except ValueError as error:
            raise argparse.ArgumentTypeError(str(error).replace(f"name={text!r}", repr(text), 1)) from None

    parse.__name__ = what  # argparse names the type in its messages
    return parse


def _gpu_spec(text: str):
    from lab_utils import hardware

    spec = hardware.get(text)
    if spec.kind != "gpu":
        raise ValueError(f"name={text!r} is a {spec.kind}, not a GPU; see `lab-utils hardware --kind gpu`")
    return spec


def _device_name(text: str) -> str:
    from lab_utils import hardware

    return _catalog_name(hardware.get, "device")(text)


def _model_name(text: str) -> str:
    from lab_utils import llms

    return _catalog_name(llms.get, "model")(text)


def _gpu_name(text: str) -> str:
    return _catalog_name(_gpu_spec, "GPU")(text)


def _engine_name(text: str) -> str:
    from lab_utils import engines

    return _catalog_name(engines.get, "engine")(text)


_ENGINE_HELP = (
    "serving engine whose profile times the bounds: bound, vllm, tensorrt-llm, tensorrt-llm-fp8, "
    "transformers-gptq, llama.cpp-metal (default: the one practitioners run on the device)"
)


def _print_assumptions(taken, args: argparse.Namespace) -> None:
    """The assumptions an answer took, one short line each, with the option that overrides it
    where the command that answered (its parsed ``args``) has that option."""
    from lab_utils import assumptions

    names = {a.name for a in assumptions.catalog()}
    known = {name: value for name, value in dict(taken).items() if name in names}
    if not known:
        return
    print("assumptions (lab_utils/data/assumptions.toml):")
    for name, line in zip(known, assumptions.lines(known)):
        flags = (assumptions.get(name).option or "").split(" | ")
        flag = next((f for f in flags if f and hasattr(args, f.lstrip("-").replace("-", "_"))), None)
        print(f"  {line}" + (f" [{flag}]" if flag else ""))


def _table(rows, headers=(), colalign=None) -> str:
    """Rows as a text table (tabulate); without ``headers``, two plain columns of name and value."""
    from tabulate import tabulate

    return tabulate(
        rows,
        headers=headers,
        tablefmt="simple" if headers else "plain",
        disable_numparse=True,
        colalign=colalign,
    )


# --- memory ----------------------------------------------------------------------------------


def _memory(args: argparse.Namespace) -> int:
    from lab_utils import assumptions, hardware, memory
    from lab_utils.units import bytes_label, format_bytes

    precision = args.precision or assumptions.precision_for(args.method)
    if precision not in memory.precisions_for(args.method):
        raise UsageError(
            f"argument --precision: {precision!r} is not allowed with --method {args.method}; "
            f"use one of {', '.join(memory.precisions_for(args.method))}"
        )
    taken = {} if args.precision else {f"precision.{args.method}": precision}
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
        return _memory_longest(args, job, taken)
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
    gpus = [(spec, memory.gpus_needed(total, spec)) for spec in hardware.catalog("gpu") if spec.memory_bytes]
    if args.json:
        print(
            json.dumps(
                {
                    "parts_bytes": dict(parts),
                    "total_bytes": total,
                    "assumptions": dict(taken),
                    "gpus_needed": {spec.name: n for spec, n in gpus},
                },
                indent=2,
                default=str,
            )
        )
        return 0
    print(
        _table(
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
            "fits on one" if n == 1 else f"needs at least {n} (split evenly)",
        )
        for spec, n in gpus
    ]
    print("\nCatalog GPUs (usable: the vendor's memory less the CUDA context reserve, cuda_context_bytes):")
    print(_table(rows, ("GPU", "vendor memory", "usable", "verdict"), ("left", "right", "right", "left")))
    _print_assumptions({**taken, "cuda_context_bytes": assumptions.value("cuda_context_bytes")}, args)
    return 0


def _memory_longest(args: argparse.Namespace, job: dict, taken: dict) -> int:
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
        _table(
            [
                *((label, format_bytes(value)) for label, value in estimate.parts),
                ("total", format_bytes(estimate.total_bytes)),
            ],
            ("part", bytes_label("memory")),
            ("left", "right"),
        )
    )
    _print_assumptions(taken, args)
    return 0


def _add_memory(commands) -> None:
    from lab_utils import memory

    parser = _add_command(
        commands,
        "memory",
        _memory,
        help="memory a model needs, part by part, and which catalog GPUs it fits on",
        examples="  lab-utils memory --params 8e9\n"
        "  lab-utils memory --model llama-3.1-8b --method qlora\n"
        "  lab-utils memory --model llama-3.1-8b --method lora --seq-len 4096 --recompute none\n"
        "  lab-utils memory --model llama-3.1-8b --method qlora --gpu rtx-4090 --max-seq-len",
    )
    which = parser.add_mutually_exclusive_group(required=True)
    which.add_argument("--params", type=_positive_float, help="parameter count, e.g. 8e9")
    which.add_argument(
        "--model", type=_model_name, help="a public model from the course catalog, e.g. llama-3.1-8b"
    )
    parser.add_argument("--method", default="inference", choices=memory.JOB_METHODS)
    parser.add_argument(
        "--precision",
        default=None,
        choices=tuple(dict.fromkeys((*memory.BYTES_PER_VALUE, *memory.TRAINING_PRECISIONS))),
        help="default: the method's (see the assumptions printed with the answer)",
    )
    parser.add_argument("--batch", type=_positive_int, help="sequences at once (default: the assumption)")
    parser.add_argument("--seq-len", type=_positive_int, help="tokens per sequence (default: the assumption)")
    parser.add_argument(
        "--recompute",
        choices=memory.RECOMPUTE,
        help="activation recomputation for fine-tunes (default: the assumption)",
    )
    parser.add_argument("--lora-rank", type=_positive_int, help="LoRA rank (default: the assumption)")
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
    parser.add_argument("--gpu", type=_gpu_name, help="a catalog GPU, for --max-seq-len")
    parser.add_argument(
        "--max-seq-len",
        action="store_true",
        help="print the longest sequence of this job that fits one --gpu",
    )
    parser.add_argument("--json", action="store_true", help="print JSON (bytes) instead of tables")


# --- cost ------------------------------------------------------------------------------------


def _cost_fine_tune(args: argparse.Namespace) -> int:
    from lab_utils import assumptions, economics, hardware
    from lab_utils.units import format_bytes

    spec = hardware.get(args.gpu or assumptions.value("default_gpu"))
    if args.dtype is not None and args.dtype not in spec.peak_flops:
        raise UsageError(
            f"argument --dtype: {spec.name} has no {args.dtype} peak in the catalog; "
            f"it has {', '.join(spec.peak_flops)}"
        )
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
    if args.json:
        print(
            json.dumps(
                {
                    **dataclasses.asdict(estimate),
                    "gpu_hours": estimate.gpu_hours,
                    "cost_usd": estimate.cost_usd,
                    "assumptions": dict(estimate.assumptions),
                },
                indent=2,
                default=str,
            )
        )
        return 0
    cost = (
        "no price for this GPU in the data: give --price-per-gpu-hour"
        if estimate.cost_usd is None
        else _fmt_money(estimate.cost_usd)
    )
    price = "-" if estimate.usd_per_gpu_hour is None else f"${estimate.usd_per_gpu_hour:.2f} per GPU-hour"
    servers = f" ({estimate.n_nodes} servers)" if estimate.n_nodes > 1 else ""
    print(
        f"{estimate.model}, {estimate.method} on {estimate.n_tokens:.3g} tokens, "
        f"{estimate.n_gpus} x {estimate.gpu}{servers} at MFU {estimate.mfu:g} of the {estimate.dtype} peak"
    )
    print(
        _table(
            [
                (
                    "compute",
                    f"{estimate.flops:.3g} model FLOP ({estimate.attention_flops / estimate.flops:.0%} "
                    f"attention); the GPUs execute {estimate.hardware_flops:.3g} "
                    f"(recomputation), HFU {estimate.hfu:.2f}",
                ),
                ("memory", format_bytes(estimate.memory_bytes, binary=False)),
                ("time", f"{estimate.hours:.3g} h wall clock, {estimate.gpu_hours:.3g} GPU-hours"),
                ("price", f"{price} ({estimate.price_source})"),
                ("cost", cost),
            ]
        )
    )
    _print_assumptions(estimate.assumptions, args)
    return 0


def _cost_serve(args: argparse.Namespace) -> int:
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
            efficiency=1.0 if args.efficiency is None else args.efficiency,
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
                f"; it fits in {' or '.join(fitting)} (--precision {fitting[-1]}), the way such models are "
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
            _table(
                [
                    ("time to first token", f"{estimate.ttft_s * 1e3:,.1f} ms"),
                    ("time per output token", f"{estimate.tpot_s * 1e3:,.2f} ms"),
                    ("request in a full batch", f"{estimate.latency_s:,.2f} s"),
                    ("tokens/s (in + out)", f"{estimate.tokens_per_s:,.0f}"),
                    ("generated tokens/s", f"{estimate.output_tokens_per_s:,.0f}"),
                    ("price", f"${estimate.usd_per_hour:.2f}/h ({estimate.price_source})"),
                ]
            ),
            f"  {_fmt_money(estimate.usd_per_million_output_tokens)} per 1M generated tokens",
        ]
        price, tokens_per_s = estimate.usd_per_hour, estimate.tokens_per_s
    elif price is None or tokens_per_s is None:
        raise UsageError("arguments --price-per-hour and --tokens-per-s are both needed without --model")
    else:
        lines.append(f"  ${price:.2f}/h at {tokens_per_s:,.0f} tokens/s")
    result["usd_per_million_tokens"] = economics.cost_per_million_tokens(price, tokens_per_s)
    lines.append(
        f"  {_fmt_money(result['usd_per_million_tokens'])} per 1M tokens (fully busy; idle time costs extra)"
    )
    advice = _cost_at_load(args) if args.requests_per_day is not None else None
    if args.json:
        if advice is not None:
            result["at_load"] = advice.to_dict()
        print(json.dumps({**result, "assumptions": taken}, indent=2, default=str))
        return 0
    print("\n".join(lines))
    _print_assumptions(taken, args)
    if advice is not None:
        gpu = hardware.get(args.gpu).name
        print(
            f"\nAt {args.requests_per_day:,.0f} requests a day "
            "(lab_utils.advisor, as `lab-utils pick serve`):"
        )
        for option in advice.options:
            if option.kind == "gpu" and option.name.split(" x ")[-1] == f"{gpu} always on":
                cost = "no price" if option.cost_usd is None else _fmt_money(option.cost_usd)
                print(
                    f"  {option.name} ({option.precision}): {cost} per month"
                    + (f"; cannot: {option.why}" if option.why else "")
                )
        print(f"  {advice.verdict}")
    return 0


def _cost_at_load(args: argparse.Namespace):
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


def _cost_breakeven(args: argparse.Namespace) -> int:
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
    _print_assumptions(taken, args)
    return 0


def _add_cost(commands) -> None:
    from lab_utils import assumptions, serving

    parser = _add_command(
        commands,
        "cost",
        lambda args: _usage_error(parser, "choose a cost: fine-tune, serve or breakeven"),
        help="fine-tune cost, serving cost per 1M tokens, API vs self-host break-even",
        examples="  lab-utils cost fine-tune --model llama-3.1-8b --tokens 1e8 --method lora --gpu h100\n"
        "  lab-utils cost serve --price-per-hour 2.5 --tokens-per-s 1500\n"
        "  lab-utils cost serve --model llama-3.1-8b --gpu 'RTX 4090' --batch 32\n"
        "  lab-utils cost breakeven --api-per-million 0.6 --price-per-hour 2.5 --tokens-per-s 1500",
    )
    costs = parser.add_subparsers(dest="cost", metavar="COST")
    fine = _add_command(
        costs,
        "fine-tune",
        _cost_fine_tune,
        help="hours, GPUs and dollars for one fine-tune",
        examples="  lab-utils cost fine-tune --model llama-3.1-8b --tokens 1e8\n"
        "  lab-utils cost fine-tune --model llama-3.1-8b --tokens 1e8 --gpu T4\n"
        "  lab-utils cost fine-tune --model llama-3.1-8b --tokens 1e9 --method full "
        "--gpu 'H100 SXM' --price-per-gpu-hour 3",
    )
    fine.add_argument("--model", type=_model_name, required=True, help="a public model, e.g. llama-3.1-8b")
    fine.add_argument("--tokens", type=_positive_float, required=True, help="training tokens, e.g. 1e8")
    fine.add_argument("--method", choices=assumptions.FINE_TUNE_METHODS, help="default: the assumption")
    fine.add_argument("--gpu", type=_gpu_name, help="a catalog GPU (default: the assumption)")
    fine.add_argument("--mfu", type=_fraction, help="model FLOPs utilisation (default: the assumption)")
    fine.add_argument(
        "--dtype",
        choices=("fp32", "tf32", "bf16", "fp16", "fp8"),
        help="the peak to compute at (default: bf16 where the GPU has it, else fp16)",
    )
    fine.add_argument("--seq-len", type=_positive_int, help="tokens per sequence (default: the assumption)")
    fine.add_argument(
        "--batch", type=_positive_int, help="sequences per GPU per step (default: the assumption)"
    )
    fine.add_argument("--lora-rank", type=_positive_int, help="LoRA rank (default: the assumption)")
    fine.add_argument(
        "--price-per-gpu-hour",
        type=_non_negative_float,
        help="default: the cheapest rentable offer for that GPU in the price catalog",
    )
    fine.add_argument("--json", action="store_true", help="print JSON instead of a table")
    serve = _add_command(
        costs,
        "serve",
        _cost_serve,
        help="TTFT, TPOT, tokens/s and dollars per 1M tokens on a GPU",
        examples="  lab-utils cost serve --price-per-hour 2.5 --tokens-per-s 1500\n"
        "  lab-utils cost serve --model llama-3.1-8b --gpu 'RTX 4090' --batch 8",
    )
    serve.add_argument(
        "--price-per-hour",
        type=_non_negative_float,
        help="with --model: default the GPU's cheapest rentable offer",
    )
    serve.add_argument("--tokens-per-s", type=_positive_float)
    serve.add_argument(
        "--model",
        type=_model_name,
        help="estimate TTFT, TPOT and tokens/s from the serving bounds (lab_utils.serving)",
    )
    serve.add_argument("--gpu", type=_gpu_name, help="a catalog GPU (default: the assumption)")
    serve.add_argument(
        "--precision",
        choices=serving.PRECISIONS,
        help="weights, KV cache and compute together (default: the assumption)",
    )
    serve.add_argument(
        "--batch", type=_positive_int, help="sequences decoded at once (default: the assumption)"
    )
    serve.add_argument(
        "--requests-per-day",
        type=_positive_float,
        help="also price a month at this load, with the advisor's verdict (as pick serve)",
    )
    serve.add_argument("--json", action="store_true", help="print JSON instead of a table")
    serve.add_argument(
        "--input-tokens", type=_non_negative_int, help="prompt tokens (default: the assumption)"
    )
    serve.add_argument("--output-tokens", type=_positive_int, help="answer tokens (default: the assumption)")
    serve.add_argument(
        "--efficiency",
        type=_fraction,
        help="an extra factor on the engine's times (default 1: the engine's profile alone)",
    )
    serve.add_argument("--engine", type=_engine_name, help=_ENGINE_HELP)
    even = _add_command(
        costs,
        "breakeven",
        _cost_breakeven,
        help="tokens per month above which self-hosting costs no more than the API",
        examples="  lab-utils cost breakeven --api-per-million 0.6 --price-per-hour 2.5 "
        "--tokens-per-s 1500\n"
        "  lab-utils cost breakeven --api-per-million 3 --price-per-hour 2.5 "
        "--tokens-per-s 1500 --fine-tune-cost 500 --always-on",
    )
    even.add_argument(
        "--api-per-million", type=_non_negative_float, required=True, help="API $ per 1M tokens"
    )
    even.add_argument("--price-per-hour", type=_non_negative_float, required=True, help="GPU $ per hour")
    even.add_argument(
        "--tokens-per-s", type=_positive_float, required=True, help="self-hosted tokens/s per GPU"
    )
    even.add_argument("--fine-tune-cost", type=_non_negative_float, default=0.0)
    even.add_argument(
        "--amortize-months",
        type=_positive_float,
        help="months to spread the fine-tune over (default: the assumption)",
    )
    even.add_argument("--always-on", action="store_true", help="bill whole GPUs all month")
    even.add_argument("--json", action="store_true", help="print JSON instead of a sentence")


# --- pick ------------------------------------------------------------------------------------


def _pick(args: argparse.Namespace) -> int:
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
    if args.json:
        print(json.dumps(advice.to_dict(), indent=2, default=str))
    else:
        print(advice.table(limit=args.limit))
        print(advice.verdict)
        given = {
            "mfu": args.mfu,
            "seq_len": args.seq_len,
            "batch": args.batch,
            "input_tokens": args.input_tokens,
            "output_tokens": args.output_tokens,
            "latency_target_s": args.latency_s,
            "serve_precisions": args.precision,
        }
        _print_assumptions(
            {name: value for name, value in advice.assumptions if given.get(name) is None}, args
        )
    return 0


def _add_pick(commands) -> None:
    from lab_utils import assumptions, serving

    parser = _add_command(
        commands,
        "pick",
        _pick,
        help="rank every CPU, GPU, serverless and API option for a job by cost and time",
        examples="  lab-utils pick fine-tune --model llama-3.1-8b --tokens 1e8 --method lora\n"
        "  lab-utils pick serve --model llama-3.1-8b --requests-per-day 1000 --json\n"
        "  lab-utils pick fine-tune --model llama-3.1-8b --tokens 1e8 --rank-by energy\n"
        "  lab-utils pick train --params 2e7 --examples 1e9 --embedding-params 2e11 --lookups 40",
    )
    parser.add_argument("job", choices=("fine-tune", "serve", "train"))
    parser.add_argument("--model", type=_model_name, help="a public model, e.g. llama-3.1-8b")
    parser.add_argument(
        "--params", type=_positive_float, help="parameters (fine-tune without --model; train: dense)"
    )
    parser.add_argument("--tokens", type=_positive_float, help="fine-tune: training tokens, e.g. 1e8")
    parser.add_argument(
        "--method", choices=assumptions.FINE_TUNE_METHODS, help="fine-tune: default the assumption"
    )
    parser.add_argument("--requests-per-day", type=_positive_float)
    parser.add_argument(
        "--input-tokens", type=_positive_int, help="serve: prompt tokens (default: the assumption)"
    )
    parser.add_argument(
        "--output-tokens", type=_positive_int, help="serve: answer tokens (default: the assumption)"
    )
    parser.add_argument(
        "--latency-s", type=_positive_float, help="serve: latency target (default: the assumption)"
    )
    parser.add_argument(
        "--precision",
        choices=serving.PRECISIONS,
        help="serve: one precision for every GPU (default: each GPU at every precision that fits)",
    )
    parser.add_argument(
        "--seq-len", type=_positive_int, help="fine-tune: tokens per sequence (default: the assumption)"
    )
    parser.add_argument(
        "--batch", type=_positive_int, help="fine-tune: sequences per GPU (default: the assumption)"
    )
    parser.add_argument("--examples", type=_positive_float, help="train: examples seen")
    parser.add_argument(
        "--embedding-params", type=_non_negative_float, default=0.0, help="train: embedding values"
    )
    parser.add_argument(
        "--lookups", type=_non_negative_int, default=0, help="train: embedding rows looked up per example"
    )
    parser.add_argument("--mfu", type=_fraction, help="model FLOPs utilisation (default: the assumption)")
    parser.add_argument("--engine", type=_engine_name, help=f"serve: {_ENGINE_HELP}")
    parser.add_argument("--limit", type=_positive_int, help="print only the first N options")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    parser.add_argument(
        "--rank-by",
        choices=("cost", "energy"),
        default="cost",
        help="order the options by dollars (default) or by estimated kWh, fewest first",
    )


# --- split -----------------------------------------------------------------------------------


def _split(args: argparse.Namespace) -> int:
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
    if args.json:
        print(json.dumps(plan.to_dict(), indent=2))
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
        _table(
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
    _print_assumptions(plan.assumptions, args)
    return 0


def _add_split(commands) -> None:
    parser = _add_command(
        commands,
        "split",
        _split,
        help="memory per GPU and communication per step of data, fully sharded, tensor and pipeline parallel "
        "training on nodes of GPUs",
        examples="  lab-utils split --model llama-3.1-70b --gpu h100 --gpus-per-node 8 --nodes 4\n"
        "  lab-utils split --model llama-3.1-8b --gpu a100-80gb --nodes 1 --json",
    )
    parser.add_argument("--model", required=True, type=_model_name, help="a public model, e.g. llama-3.1-70b")
    parser.add_argument("--gpu", required=True, type=_gpu_name, help="a catalog GPU, e.g. h100")
    parser.add_argument("--gpus-per-node", type=_positive_int, help="GPUs per node (default: the assumption)")
    parser.add_argument("--nodes", type=_positive_int, help="nodes (default: the assumption)")
    parser.add_argument(
        "--batch", type=_positive_int, help="sequences per micro-batch (default: the assumption)"
    )
    parser.add_argument("--seq-len", type=_positive_int, help="tokens per sequence (default: the assumption)")
    parser.add_argument(
        "--microbatches", type=_positive_int, help="micro-batches per step (default: the assumption)"
    )
    parser.add_argument(
        "--network-gbytes-per-s",
        type=_positive_float,
        help="GB/s each way per GPU between nodes (default: the assumption)",
    )
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")


# --- the parser ------------------------------------------------------------------------------

COMMANDS = (
    _add_doctor,
    _add_bench,
    _add_compare,
    _add_hardware,
    _add_memory,
    _add_cost,
    _add_pick,
    _add_split,
)
"""One registering function per sub-command, in --help order; add one to add a command."""


def build_parser() -> argparse.ArgumentParser:
    """The argument parser, one sub-command per function in :data:`COMMANDS`."""
    parser = _Parser(
        prog="lab-utils",  # also `python -m lab_utils` (lab_utils/__main__.py)
        description="Helpers for the course 'CPU vs GPU for AI'.",
        epilog="examples:\n  lab-utils doctor\n  lab-utils memory --model llama-3.1-8b\n"
        "  lab-utils COMMAND --help",
        formatter_class=_formatter,
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {lab_utils.__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for add in COMMANDS:
        add(commands)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run one sub-command; returns the exit status. Bad usage or input: one line on stderr,
    status 2. Anything else is a bug: its traceback, a line saying so, status 1."""
    parser = build_parser()
    args = parser.parse_args(argv)
    command = " ".join(
        str(part)
        for part in (args.command, getattr(args, "cost", None) or getattr(args, "job", None))
        if part
    )
    try:
        return args.run(args)
    except UsageError as error:
        _usage_error(parser, f"{command}: {error} (see lab-utils {command} --help)")
    except KeyboardInterrupt:
        parser.exit(130, "\ninterrupted\n")
    except BrokenPipeError:  # the reader stopped early (| head): not an error of ours
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - keeps Python's exit flush quiet
        return 0
    except Exception:  # noqa: BLE001 - everything else is ours to fix
        traceback.print_exc()
        print(
            f"this is a bug in lab-utils {lab_utils.__version__}: please report it with the command you ran "
            "and the lines above",
            file=sys.stderr,
        )
        return 1


if __name__ == "__main__":
    sys.exit(main())
