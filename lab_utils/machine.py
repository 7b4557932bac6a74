"""Describe the learner's machine, pick the device to compute on, and wait for it.

``describe()`` is the report every notebook prints after its setup cell; ``lab-utils doctor``
prints the same report in a terminal.
"""

from __future__ import annotations

import html
import os
import platform
import re
import subprocess
import sys
from dataclasses import dataclass

from lab_utils.units import format_bytes

RUNTIMES = ("colab", "runpod", "local")


@dataclass(frozen=True)
class MachineReport:
    """What this machine offers the course. Sizes in bytes; None where not applicable."""

    python_version: str
    torch_version: str
    cuda_available: bool
    cuda_version: str | None  # CUDA version torch was built with; None for a CPU build
    device_name: str  # the GPU torch will use, else the CPU model
    gpu_count: int
    gpu_memory_bytes: int | None
    gpu_compute_capability: str | None  # e.g. "9.0" for Hopper
    cpu_model: str
    physical_cores: int | None
    logical_cores: int
    torch_threads: int
    ram_bytes: int
    runtime: str  # "colab" | "runpod" | "local"
    os_name: str
    mps_available: bool = False  # an Apple-silicon GPU torch can use (then gpu_memory_bytes is
    # torch.mps.recommended_max_memory(): the unified memory macOS lets the GPU use)

    def rows(self) -> list[tuple[str, str]]:
        """The report as (label, human-readable value) pairs, in display order."""
        gpu = "none (torch sees no CUDA device)"
        if self.mps_available:
            memory = format_bytes(self.gpu_memory_bytes)
            gpu = f"{self.device_name} GPU via MPS, up to {memory} of unified memory"
        if self.cuda_available:
            gpu = (
                f"{self.device_name} x {self.gpu_count}, "
                f"{format_bytes(self.gpu_memory_bytes)}, "
                f"compute capability {self.gpu_compute_capability}"
            )
        cores = f"{self.logical_cores} logical"
        if self.physical_cores is not None:
            cores = f"{self.physical_cores} physical, {cores}"
        return [
            ("Runtime", self.runtime),
            ("Operating system", self.os_name),
            ("Python", self.python_version),
            ("PyTorch", self.torch_version),
            ("CUDA (torch build)", self.cuda_version or "none: a CPU-only build"),
            ("GPU", gpu),
            ("CPU", self.cpu_model),
            ("CPU cores", cores),
            ("torch threads", str(self.torch_threads)),
            ("RAM", format_bytes(self.ram_bytes)),
        ]

    def __str__(self) -> str:
        from tabulate import tabulate

        return tabulate(self.rows(), tablefmt="plain", disable_numparse=True)

    def _repr_html_(self) -> str:
        body = "".join(
            f"<tr><th style='text-align:left'>{html.escape(label)}</th>"
            f"<td style='text-align:left'>{html.escape(value)}</td></tr>"
            for label, value in self.rows()
        )
        return f"<table><caption>This machine</caption>{body}</table>"


def detect_runtime(environ: dict | None = None) -> str:
    """'colab', 'runpod' or 'local', from the variables each platform sets in the environment."""
    env = os.environ if environ is None else environ
    if "COLAB_RELEASE_TAG" in env or "COLAB_GPU" in env:
        return "colab"
    if "RUNPOD_POD_ID" in env:
        return "runpod"
    return "local"


def cpu_model() -> str:
    """The CPU's marketing name, e.g. 'AMD EPYC 9684X 96-Core Processor', or a best guess."""
    if sys.platform.startswith("linux"):
        try:
            with open("/proc/cpuinfo", encoding="utf-8") as cpuinfo:
                match = re.search(r"^model name\s*:\s*(.+)$", cpuinfo.read(), re.MULTILINE)
            if match:
                return match.group(1).strip()
        except OSError:
            pass
    elif sys.platform == "darwin":
        try:
            return subprocess.run(
                ["sysctl", "-n", "machdep.cpu.brand_string"],
                capture_output=True,
                text=True,
                check=True,
                timeout=5,
            ).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            pass
    return platform.processor() or platform.machine() or "unknown"


def cpu_vector_unit() -> str | None:
    """The widest FP32 vector instructions of this CPU: "avx512" or "avx2" (x86: /proc/cpuinfo's
    flags on Linux, sysctl on macOS), "neon" (64-bit Arm, Apple silicon included); None when it
    cannot tell (x86 on Windows, or older x86)."""
    if platform.machine().lower() in ("arm64", "aarch64"):
        return "neon"
    flags = set()
    try:
        if sys.platform.startswith("linux"):
            with open("/proc/cpuinfo", encoding="utf-8") as cpuinfo:
                match = re.search(r"^flags\s*:\s*(.+)$", cpuinfo.read(), re.MULTILINE)
            flags = set(match.group(1).lower().split()) if match else set()
        elif sys.platform == "darwin":
            flags = set(
                subprocess.run(
                    ["sysctl", "-n", "machdep.cpu.features", "machdep.cpu.leaf7_features"],
                    capture_output=True,
                    text=True,
                    timeout=5,
                )
                .stdout.lower()
                .split()
            )
    except (OSError, subprocess.SubprocessError):
        return None
    if "avx512f" in flags:
        return "avx512"
    if {"avx2", "fma"} <= flags or {"avx2", "fma3"} <= flags:
        return "avx2"
    return None


def describe() -> MachineReport:
    """Report this machine: Python, torch, CUDA, GPU, CPU, cores, threads, RAM and runtime."""
    import psutil
    import torch

    cuda_available = torch.cuda.is_available()
    gpu_count = torch.cuda.device_count() if cuda_available else 0
    gpu_memory_bytes = gpu_compute_capability = None
    device_name = cpu_model()
    if cuda_available:
        properties = torch.cuda.get_device_properties(0)
        device_name = properties.name
        gpu_memory_bytes = properties.total_memory
        gpu_compute_capability = f"{properties.major}.{properties.minor}"
    mps_available = not cuda_available and _mps_available()
    if mps_available:
        gpu_memory_bytes = torch.mps.recommended_max_memory()
    return MachineReport(
        python_version=platform.python_version(),
        torch_version=torch.__version__,
        cuda_available=cuda_available,
        cuda_version=torch.version.cuda,
        device_name=device_name,
        gpu_count=gpu_count,
        gpu_memory_bytes=gpu_memory_bytes,
        gpu_compute_capability=gpu_compute_capability,
        cpu_model=cpu_model(),
        physical_cores=psutil.cpu_count(logical=False),
        logical_cores=psutil.cpu_count(logical=True) or os.cpu_count() or 1,
        torch_threads=torch.get_num_threads(),
        ram_bytes=psutil.virtual_memory().total,
        runtime=detect_runtime(),
        os_name=f"{platform.system()} {platform.release()}",
        mps_available=mps_available,
    )


def _mps_available() -> bool:
    """Whether torch can compute on an Apple-silicon GPU (MPS): built with it, and the Mac able
    to run it (macOS 12.3 or later); False on torch builds without the backend."""
    import torch

    mps = getattr(torch.backends, "mps", None)
    return bool(mps is not None and mps.is_available())


def pick_device():
    """The device to compute on: torch.device('cuda') when a CUDA GPU is usable, else 'mps' on
    an Apple-silicon Mac whose torch can use its GPU, else 'cpu'.

    MPS lacks some operators and float64: torch raises NotImplementedError for those unless
    the environment variable PYTORCH_ENABLE_MPS_FALLBACK=1 was set before torch was imported,
    which runs them on the CPU instead.
    """
    import torch

    if torch.cuda.is_available():
        return torch.device("cuda")
    return torch.device("mps" if _mps_available() else "cpu")


def l2_cache_bytes(device=None) -> int | None:
    """Bytes of a CUDA device's L2 cache: what torch reports, else the hardware catalog's figure
    for the device's name; None on other devices or when neither knows. A bandwidth test must
    move buffers well past it, or it measures the cache."""
    import torch

    from lab_utils import hardware

    device = as_device(device)
    if device.type != "cuda":
        return None
    properties = torch.cuda.get_device_properties(device)
    reported = getattr(properties, "L2_cache_size", None)
    if reported:
        return int(reported)
    try:
        return hardware.get(properties.name).l2_bytes
    except ValueError:  # a GPU the catalog lacks
        return None


def as_device(device):
    """``device`` (None, a str or a torch.device) as a torch.device; None means pick_device()."""
    import torch

    if device is None:
        return pick_device()
    if not isinstance(device, (str, torch.device)):
        raise TypeError(f"device must be None, a str or a torch.device, got {type(device).__name__}")
    try:
        return torch.device(device)
    except RuntimeError as error:
        raise ValueError(f"device={device!r} is not a device torch knows, e.g. 'cpu' or 'cuda:0'") from error


def synchronize(device=None) -> None:
    """Wait until all work queued on ``device`` has finished (a no-op on the CPU).

    GPU kernels run asynchronously: without this, a timer measures the launch, not the work.
    """
    import torch

    device = as_device(device)
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    elif device.type == "mps":
        torch.mps.synchronize()
    elif device.type != "cpu":
        raise ValueError(f"device={str(device)!r}: synchronize supports 'cpu', 'cuda' and 'mps'")
