"""FLOP and byte counts of a matrix product, arithmetic intensity, and the roofline plot.

The roofline model (Williams, Waterman & Patterson, "Roofline", CACM 52(4), 2009): a kernel
that does ``flops`` of arithmetic while moving ``bytes`` between memory and the chip has an
arithmetic (operational) intensity I = flops / bytes, in FLOP per byte, and a device with a
peak of P FLOP/s and a memory bandwidth of B bytes/s runs it at most at min(P, B x I).
Below the ridge point P / B (``hardware.Spec.ridge_point``) the kernel is bandwidth bound.

For the product of an m x k matrix with a k x n matrix: 2mnk FLOPs, and at least
(mk + kn + mn) elements moved (each operand read once, the result written once), so a square
product has intensity n/6 in fp32 and n/3 in fp16 or bf16; a matrix-vector product (batch-1
decoding) about 1 FLOP per byte in fp16.

>>> matmul_flops(1024, 1024, 1024)
2147483648
>>> arithmetic_intensity(matmul_flops(1024, 1024, 1024), matmul_bytes(1024, 1024, 1024, 4))
170.66666666666666

Pure Python (no torch); matplotlib loads only when :func:`plot` draws.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

from lab_utils import checks, hardware

__all__ = [
    "DEFAULT_DEVICES", "Point", "Roof", "arithmetic_intensity", "attainable_flops",
    "matmul_bytes", "matmul_flops", "matmul_intensity", "plot", "roof_of",
]

DEFAULT_DEVICES = ("T4", "A100 80GB SXM", "H100 SXM", "H200 SXM", "AMD EPYC 9684X")
"""Catalog devices :func:`plot` draws unless told otherwise: GPUs from a free Colab T4 to an
H200, and a server CPU."""

DTYPE_PREFERENCE = ("bf16", "fp16", "fp32")
"""Which catalog peak :func:`roof_of` uses by default: the first of these the device has."""


def _check_dimension(name: str, value) -> int:
    return checks.count(name, value, what="a positive int (a matrix dimension)")


def _check_positive(name: str, value, allow_zero: bool = False, allow_inf: bool = False) -> float:
    return checks.number(name, value, strict=not allow_zero, allow_inf=allow_inf)


def matmul_flops(m: int, n: int, k: int) -> int:
    """FLOPs of the product of an m x k matrix with a k x n matrix: 2mnk.

    Each of the m x n results takes k multiplications and k additions (a fused multiply-add
    counts as 2 FLOPs, as vendor peaks count it).
    """
    m, n, k = (_check_dimension(name, value) for name, value in (("m", m), ("n", n), ("k", k)))
    return 2 * m * n * k


def matmul_bytes(m: int, n: int, k: int, bytes_per_element: float) -> float:
    """Least bytes an m x k by k x n product moves: bytes_per_element x (mk + kn + mn).

    Each operand is read once and the result written once, as if the caches were large enough
    (the roofline's compulsory traffic); real kernels move at least this much.
    ``bytes_per_element``: 4 for fp32, 2 for bf16/fp16, 1 for fp8/int8 (``torch.float16.itemsize``).
    """
    m, n, k = (_check_dimension(name, value) for name, value in (("m", m), ("n", n), ("k", k)))
    _check_positive("bytes_per_element", bytes_per_element)
    return (m * k + k * n + m * n) * bytes_per_element


def arithmetic_intensity(flops: float, bytes: float) -> float:  # noqa: A002 - the issue's name
    """Arithmetic intensity in FLOP per byte: ``flops / bytes`` (Williams et al., 2009)."""
    flops = _check_positive("flops", flops, allow_zero=True)
    moved = _check_positive("bytes", bytes)
    return flops / moved


def matmul_intensity(m: int, n: int, k: int, bytes_per_element: float) -> float:
    """FLOP per byte of an m x k by k x n product: 2mnk / (bytes_per_element x (mk + kn + mn))."""
    return arithmetic_intensity(matmul_flops(m, n, k), matmul_bytes(m, n, k, bytes_per_element))


def attainable_flops(peak_flops: float, bandwidth_bytes_per_s: float, intensity: float) -> float:
    """The roofline: min(peak_flops, bandwidth_bytes_per_s x intensity), in FLOP/s.

    ``intensity`` in FLOP per byte (Williams, Waterman & Patterson, CACM 52(4), 2009).
    """
    peak = _check_positive("peak_flops", peak_flops)
    bandwidth = _check_positive("bandwidth_bytes_per_s", bandwidth_bytes_per_s)
    intensity = _check_positive("intensity", intensity, allow_zero=True, allow_inf=True)
    return min(peak, bandwidth * intensity)


@dataclass(frozen=True)
class Roof:
    """One device's roofline: a peak in FLOP/s and a bandwidth in bytes/s, with a legend label
    that says where the figures come from (e.g. "T4, fp16 (vendor specification)") and the
    dtype of the peak when known."""

    label: str
    peak_flops: float
    bandwidth_bytes_per_s: float
    dtype: str | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.label, str) or not self.label.strip():
            raise ValueError(f"label={self.label!r}: a roof needs a non-empty label")
        _check_positive("peak_flops", self.peak_flops)
        _check_positive("bandwidth_bytes_per_s", self.bandwidth_bytes_per_s)


@dataclass(frozen=True)
class Point:
    """One measured kernel on the roofline: intensity in FLOP/byte, achieved FLOP/s.
    Points with the same label share a marker and one legend entry."""

    label: str
    intensity: float
    flops_per_s: float

    def __post_init__(self) -> None:
        if not isinstance(self.label, str) or not self.label.strip():
            raise ValueError(f"label={self.label!r}: a point needs a non-empty label")
        _check_positive("intensity", self.intensity)
        _check_positive("flops_per_s", self.flops_per_s)


def roof_of(device, dtype: str | None = None) -> Roof:
    """The :class:`Roof` of a catalog device (a name for ``hardware.get`` or a ``Spec``).

    ``dtype``: which peak to use; None takes the first of :data:`DTYPE_PREFERENCE` the device
    has (a T4 has no bf16, so its fp16 peak; a CPU in the catalog has fp32 only).
    """
    spec = device if isinstance(device, hardware.Spec) else hardware.get(device)
    if dtype is None:
        dtype = next((d for d in DTYPE_PREFERENCE if d in spec.peak_flops), None)
        if dtype is None:
            raise ValueError(f"device={spec.name!r} has none of the peaks {DTYPE_PREFERENCE} in the catalog")
    spec.ridge_point(dtype)  # raises ValueError when the peak or the bandwidth is missing
    return Roof(
        label=f"{spec.name}, {dtype} (vendor specification)",
        peak_flops=spec.peak_flops[dtype],
        bandwidth_bytes_per_s=spec.bandwidth_bytes_per_s,
        dtype=dtype,
    )


def plot(points: Iterable[Point] = (), roofs: Iterable[Roof] = (), *, devices=DEFAULT_DEVICES,
         intensity_range: tuple[float, float] = (0.1, 1e4),
         title: str = "Roofline: attainable and measured throughput"):
    """Draw rooflines and measured points on log-log axes; return ``(fig, ax)``.

    ``devices``: catalog devices drawn as solid roofs (names or ``Spec``; see :func:`roof_of`);
    ``roofs``: extra :class:`Roof` lines drawn dashed, e.g. the learner's machine with its
    measured bandwidth and best measured FLOP/s; ``points``: measured kernels (:class:`Point`).
    Axes: arithmetic intensity (FLOP/byte) against FLOP/s, built with ``plots.figure``.
    """
    from lab_utils import plots

    if isinstance(devices, (str, hardware.Spec)):
        raise TypeError(f"devices must be a sequence of names or Specs, got a single {devices!r}")
    device_roofs = [roof_of(device) for device in devices]
    extra_roofs = list(roofs)
    points = list(points)
    for name, items, kind in (("roofs", extra_roofs, Roof), ("points", points, Point)):
        wrong = [item for item in items if not isinstance(item, kind)]
        if wrong:
            raise TypeError(f"{name} must hold lab_utils.roofline.{kind.__name__} objects, got {wrong[0]!r}")
    low, high = (_check_positive(f"intensity_range[{i}]", v) for i, v in enumerate(intensity_range))
    if not low < high:
        raise ValueError(f"intensity_range={intensity_range!r}: the first bound must be below the second")

    steps = 200
    intensities = [low * (high / low) ** (i / steps) for i in range(steps + 1)]
    fig, ax = plots.figure(title, "arithmetic intensity (FLOP/byte)", "throughput (FLOP/s)",
                           figsize=(8.0, 6.4), layout="constrained")
    ax.set_xscale("log")
    ax.set_yscale("log")
    for roof, style in [(r, "-") for r in device_roofs] + [(r, "--") for r in extra_roofs]:
        curve = [attainable_flops(roof.peak_flops, roof.bandwidth_bytes_per_s, i) for i in intensities]
        ax.plot(intensities, curve, style, linewidth=2 if style == "--" else 1.5, label=roof.label)
    groups: dict[str, list[Point]] = {}
    for point in points:
        groups.setdefault(point.label, []).append(point)
    markers = "osD^v<>"
    for index, (label, group) in enumerate(groups.items()):
        ax.scatter([p.intensity for p in group], [p.flops_per_s for p in group],
                   marker=markers[index % len(markers)], s=36, color="black" if index == 0 else None,
                   zorder=3, label=label)
    ax.set_xlim(low, high)
    if device_roofs or extra_roofs or points:
        ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.13), ncol=2, fontsize=9)
    return fig, ax
