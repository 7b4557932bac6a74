"""Measured joules and average watts of a block of code, from the energy counters the machine has.

Three counters, each read before and after the block:

- **NVML** (NVIDIA GPUs, Volta or newer): ``nvmlDeviceGetTotalEnergyConsumption``, millijoules
  since the driver loaded, read through NVIDIA's own bindings ``nvidia-ml-py`` (module
  ``pynvml``; ``pip install nvidia-ml-py``: one small pure-Python wheel, no root needed; Colab
  and Runpod GPU images have the driver it talks to).
- **RAPL** (Intel and AMD CPUs on Linux): ``/sys/class/powercap/intel-rapl:N/energy_uj``,
  microjoules of each CPU package, a counter that wraps at ``max_energy_range_uj`` (handled:
  one wrap per block, so a block must end before the counter wraps twice, tens of minutes at
  a few hundred watts). Linux lets only root read it since 5.10 (CVE-2020-8694); most virtual
  machines and containers, Colab's included, expose none.
- **Apple silicon**: ``zeus-apple-silicon`` (from the ML.ENERGY group that maintains Zeus),
  which reads the SoC's CPU, GPU, DRAM and Neural Engine energy through IOReport.

Why not Zeus itself? ``zeus`` reads the same counters but pulls in pandas, scikit-learn,
pydantic, rich, httpx and amdsmi for its optimisers and servers; the course needs only the
counters, so it reads them thinly (a few dozen lines each), imports each library only when
asked, and needs none of them to run: where no counter answers, :class:`EnergyReading` says so
and why (``status`` "no counter", ``joules`` None), never a made-up figure.

>>> with meter(sources=("rapl",), powercap_root="/nonexistent") as m:
...     _ = sum(range(1000))
>>> m.reading.status, m.reading.joules
('no counter', None)

Measuring layer: a clock and the machine's counters; torch only through ``machine.synchronize``.
"""

from __future__ import annotations

import importlib
import platform
import re
import sys
import timeit
from dataclasses import dataclass
from pathlib import Path

from lab_utils import checks

__all__ = ["POWERCAP_ROOT", "SOURCES", "EnergyReading", "find_counters", "measure", "meter"]

SOURCES = ("nvml", "rapl", "apple")
"""The counters :func:`meter` tries, in this order."""

POWERCAP_ROOT = "/sys/class/powercap"
"""Where Linux exposes RAPL (a parameter, so that tests can point at a fake tree)."""

_clock = timeit.default_timer  # seconds; a module attribute so that tests can drive a fake clock
_PACKAGE_ZONE = re.compile(r"^intel-rapl:\d+$")  # top-level zones; intel-rapl:0:0 etc. are parts of them


@dataclass(frozen=True)
class EnergyReading:
    """The energy of one measured block.

    ``status``: "measured" or "no counter"; ``joules``: the sum over ``joules_by_counter``
    (None when no counter answered); ``elapsed_s``: wall-clock seconds of the block;
    ``reason``: why each source that was not used is missing (empty when all answered).
    """

    status: str
    joules: float | None
    elapsed_s: float
    joules_by_counter: tuple[tuple[str, float], ...] = ()
    reason: str = ""

    @property
    def measured(self) -> bool:
        return self.status == "measured"

    @property
    def average_watts(self) -> float | None:
        """Joules / seconds; None without a counter or a duration."""
        if self.joules is None or self.elapsed_s <= 0:
            return None
        return self.joules / self.elapsed_s

    def __str__(self) -> str:
        if not self.measured:
            return f"no energy counter here ({self.elapsed_s:.3g} s): {self.reason}"
        counters = ", ".join(name for name, _ in self.joules_by_counter)
        watts = self.average_watts
        average = "" if watts is None else f", {watts:.3g} W on average"
        return f"{self.joules:.4g} J in {self.elapsed_s:.3g} s{average} (measured here: {counters})"


# --- the counters: start() and stop() -> ((name, joules), ...) ---------------------------------


class _Nvml:
    """Every NVIDIA GPU NVML sees; millijoules since the driver loaded (64-bit: no wrap)."""

    def __init__(self, nvml, handles, names):
        self._nvml, self._handles, self.names = nvml, handles, names
        self._start = ()

    def _read(self) -> tuple[float, ...]:
        return tuple(self._nvml.nvmlDeviceGetTotalEnergyConsumption(h) / 1e3 for h in self._handles)

    def start(self) -> None:
        self._start = self._read()

    def stop(self) -> tuple[tuple[str, float], ...]:
        end = self._read()
        self._nvml.nvmlShutdown()
        return tuple(zip(self.names, (b - a for a, b in zip(self._start, end))))


def _open_nvml(nvml) -> tuple[_Nvml | None, str]:
    if nvml is None:
        try:
            nvml = importlib.import_module("pynvml")
        except ImportError:
            return (
                None,
                "NVML: nvidia-ml-py is not installed "
                "(pip install nvidia-ml-py, on a machine with an NVIDIA GPU)",
            )
    try:
        nvml.nvmlInit()
    except Exception as exc:  # NVMLError_LibraryNotFound, _DriverNotLoaded, ...: no usable driver
        return None, f"NVML: no NVIDIA driver answered ({type(exc).__name__}: {exc})"
    handles, names, refused = [], [], []
    for index in range(nvml.nvmlDeviceGetCount()):
        handle = nvml.nvmlDeviceGetHandleByIndex(index)
        try:
            nvml.nvmlDeviceGetTotalEnergyConsumption(handle)
        except Exception as exc:  # NVMLError_NotSupported: GPUs older than Volta
            refused.append(
                f"GPU {index} reports no energy counter ({type(exc).__name__}; Volta or newer needed)"
            )
            continue
        handles.append(handle)
        names.append(f"nvml:gpu{index}")
    if not handles:
        nvml.nvmlShutdown()
        return None, "NVML: " + ("; ".join(refused) or "no NVIDIA GPU")
    return _Nvml(nvml, handles, tuple(names)), "; ".join(f"NVML: {r}" for r in refused)


class _Rapl:
    """The CPU packages' RAPL zones; microjoules that wrap at ``max_energy_range_uj``."""

    def __init__(self, files, ranges_uj, names):
        self._files, self._ranges_uj, self.names = files, ranges_uj, names
        self._start = ()

    def _read(self) -> tuple[int, ...]:
        return tuple(int(f.read_text()) for f in self._files)

    def start(self) -> None:
        self._start = self._read()

    def stop(self) -> tuple[tuple[str, float], ...]:
        end = self._read()
        deltas = (b - a if b >= a else b + span - a for a, b, span in zip(self._start, end, self._ranges_uj))
        return tuple((name, uj / 1e6) for name, uj in zip(self.names, deltas))


def _open_rapl(root) -> tuple[_Rapl | None, str]:
    root = Path(root)
    if not root.is_dir():
        return None, f"RAPL: no {root} (not Linux, or a kernel without powercap)"
    zones = sorted(z for z in root.iterdir() if _PACKAGE_ZONE.match(z.name))
    if not zones:
        return (
            None,
            f"RAPL: no intel-rapl zone under {root} (most virtual machines and containers expose none)",
        )
    files, ranges, names = [], [], []
    for zone in zones:
        try:
            name = (zone / "name").read_text().strip()
            if not name.startswith("package"):  # psys (laptops) overlaps the packages: count each joule once
                continue
            energy = zone / "energy_uj"
            int(energy.read_text())
            span = int((zone / "max_energy_range_uj").read_text())
        except PermissionError:
            return None, (
                f"RAPL: {zone / 'energy_uj'} is readable by root only (Linux since 5.10); "
                f"run as root, or: sudo chmod a+r {root}/intel-rapl:*/energy_uj"
            )
        except (OSError, ValueError) as exc:
            return None, f"RAPL: {zone} cannot be read ({type(exc).__name__}: {exc})"
        files.append(energy)
        ranges.append(span)
        names.append(f"rapl:{name}")
    if not files:
        return None, f"RAPL: no package zone under {root}"
    return _Rapl(files, ranges, tuple(names)), ""


class _Apple:
    """The SoC's energy through zeus-apple-silicon's measurement windows (millijoules)."""

    _PARTS = (("cpu", "cpu_total_mj"), ("gpu", "gpu_mj"), ("dram", "dram_mj"), ("ane", "ane_mj"))
    _WINDOW = "lab_utils.energy_measure"

    def __init__(self, monitor):
        self._monitor = monitor
        self.names = tuple(f"apple:{part}" for part, _ in self._PARTS)

    def start(self) -> None:
        self._monitor.begin_window(self._WINDOW)

    def stop(self) -> tuple[tuple[str, float], ...]:
        metrics = self._monitor.end_window(self._WINDOW)
        found = ((f"apple:{part}", getattr(metrics, field, None)) for part, field in self._PARTS)
        return tuple((name, mj / 1e3) for name, mj in found if mj is not None)  # a part the chip lacks: None


def _open_apple(apple) -> tuple[_Apple | None, str]:
    if apple is None:
        if sys.platform != "darwin" or platform.machine() != "arm64":
            return None, "Apple: not a Mac with Apple silicon"
        try:
            apple = importlib.import_module("zeus_apple_silicon")
        except ImportError:
            return None, "Apple: zeus-apple-silicon is not installed (pip install zeus-apple-silicon)"
    try:
        return _Apple(apple.AppleEnergyMonitor()), ""
    except Exception as exc:
        return None, f"Apple: the energy monitor did not start ({type(exc).__name__}: {exc})"


def find_counters(*, sources=SOURCES, powercap_root=POWERCAP_ROOT, nvml=None, apple=None):
    """(counters that answer, reasons for the sources that do not, "; "-joined).

    ``sources``: some of :data:`SOURCES`; ``powercap_root``: where RAPL lives; ``nvml`` and
    ``apple``: modules standing for ``pynvml`` and ``zeus_apple_silicon`` (tests pass fakes;
    None imports the real ones when asked)."""
    sources = [checks.choice("sources", s, SOURCES) for s in checks.sequence("sources", sources)]
    openers = {
        "nvml": lambda: _open_nvml(nvml),
        "rapl": lambda: _open_rapl(powercap_root),
        "apple": lambda: _open_apple(apple),
    }
    counters, reasons = [], []
    for source in sources:
        counter, reason = openers[source]()
        if counter is not None:
            counters.append(counter)
        if reason:
            reasons.append(reason)
    return tuple(counters), "; ".join(reasons)


class meter:
    """``with meter() as m: ...`` then ``m.reading``: an :class:`EnergyReading` of the block.

    Keywords as :func:`find_counters`. The counters are found when the block starts and read
    just before it and just after it; on a GPU, end the block with ``machine.synchronize()``
    (or use :func:`measure`), else the kernels still queued are not counted."""

    def __init__(self, **options):
        self._options = options
        self.reading: EnergyReading | None = None

    def __enter__(self) -> meter:
        self._counters, self._reason = find_counters(**self._options)
        for counter in self._counters:
            counter.start()
        self._started_s = _clock()
        return self

    def __exit__(self, *exc_info) -> None:
        parts = tuple(part for counter in self._counters for part in counter.stop())
        elapsed_s = _clock() - self._started_s
        if parts:
            self.reading = EnergyReading("measured", sum(j for _, j in parts), elapsed_s, parts, self._reason)
        else:
            self.reading = EnergyReading("no counter", None, elapsed_s, (), self._reason or "no source tried")


def measure(fn, *, calls: int = 1, device=None, **options) -> EnergyReading:
    """Call ``fn()`` ``calls`` times inside a :class:`meter` (keywords as :func:`find_counters`),
    waiting for ``device`` (a torch device, e.g. "cuda") to finish before the last reading."""
    calls = checks.count("calls", calls)
    with meter(**options) as m:
        for _ in range(calls):
            fn()
        if device is not None:
            from lab_utils import machine

            machine.synchronize(device)
    return m.reading
