"""``lab-utils doctor``: this machine, and what to fix before the course can run."""

from __future__ import annotations

import argparse
import dataclasses
import os
import shutil
from pathlib import Path

import lab_utils
from lab_utils.cli.common import add_command

DISTRIBUTION = "cpu-vs-gpu-course"  # pip's name for the course (PyPI's "lab-utils" is another project)
MIN_RAM_BYTES = 4e9
"""Below this the larger notebook experiments may not fit (Colab's CPU runtime has ~12.7 GB)."""
MIN_FREE_DISK_BYTES = 1.5e9
"""The README's disk need for the course and its environment."""


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
        folder = Path(lab_utils.__file__).resolve().parent
        return f"{DISTRIBUTION} not installed; lab_utils imported from {folder}"


def run(args: argparse.Namespace) -> int:
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


def register(commands) -> None:
    add_command(
        commands,
        "doctor",
        run,
        help="report this machine and what to fix; exit 0 when the course can run, 1 when not",
        examples="  lab-utils doctor\n  lab-utils doctor && echo ready",
    )
