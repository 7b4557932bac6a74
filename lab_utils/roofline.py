"""FLOP and byte counts of a matrix product, arithmetic intensity, and the roofline.

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

Pure arithmetic: no torch, no plotting. :func:`attainable_flops` and
:func:`arithmetic_intensity` also take NumPy arrays (numpy is imported only then). The figure
is ``lab_utils.plots.roofline`` (a face).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass

from lab_utils import basics, checks, hardware

__all__ = [
    "DEFAULT_DEVICES",
    "Point",
    "Roof",
    "arithmetic_intensity",
    "attainable_flops",
    "matmul_bytes",
    "matmul_flops",
    "matmul_intensity",
    "roof_of",
]

DEFAULT_DEVICES = ("T4", "A100 80GB SXM", "H100 SXM", "H200 SXM", "AMD EPYC 9684X")
"""Catalog devices ``plots.roofline`` draws unless told otherwise: GPUs from a free Colab T4 to an
H200, and a server CPU."""


def _dimensions(**sizes) -> list[int]:
    return [
        checks.count(name, value, what="a positive int (a matrix dimension)") for name, value in sizes.items()
    ]


def _is_array(value) -> bool:
    """Whether ``value`` is a NumPy array (numpy is loaded if one exists; no import here)."""
    numpy = sys.modules.get("numpy")
    return numpy is not None and isinstance(value, numpy.ndarray)


def _nonnegative_array(name: str, array, *, strict: bool, allow_inf: bool):
    """``array`` as floats if every entry is a number >= 0 (> 0 when ``strict``), finite unless
    ``allow_inf``; else TypeError / ValueError naming ``name`` and the first bad entry."""
    import numpy as np

    if array.dtype.kind not in "iuf":  # bool, str, object arrays are refused
        raise TypeError(f"{name} must be a number or an array of numbers, got an array of {array.dtype}")
    array = array.astype(float)
    bad = (
        np.isnan(array)
        | (array < 0)
        | ((array == 0) if strict else False)
        | (np.isinf(array) & (not allow_inf))
    )
    if bad.any():
        index = np.unravel_index(int(np.flatnonzero(bad)[0]), array.shape)
        where = ", ".join(str(int(i)) for i in index)
        relation = ">" if strict else ">="
        raise ValueError(
            f"{name}[{where}]={float(array[index])!r}: every entry must be a number {relation} 0"
        )
    return array


def _quantity(name: str, value, *, strict: bool = True, allow_inf: bool = False):
    """A checked float for a number, checked floats for a NumPy array."""
    if _is_array(value):
        return _nonnegative_array(name, value, strict=strict, allow_inf=allow_inf)
    return checks.number(name, value, strict=strict, allow_inf=allow_inf)


def matmul_flops(m: int, n: int, k: int) -> int:
    """FLOPs of the product of an m x k matrix with a k x n matrix: 2mnk.

    Each of the m x n results takes k multiplications and k additions (a fused multiply-add
    counts as 2 FLOPs, as vendor peaks count it).
    """
    m, n, k = _dimensions(m=m, n=n, k=k)
    return 2 * m * n * k


def matmul_bytes(m: int, n: int, k: int, bytes_per_element: float) -> float:
    """Least bytes an m x k by k x n product moves: bytes_per_element x (mk + kn + mn).

    Each operand is read once and the result written once, as if the caches were large enough
    (the roofline's compulsory traffic); real kernels move at least this much.
    ``bytes_per_element``: 4 for fp32, 2 for bf16/fp16, 1 for fp8/int8 (``torch.float16.itemsize``).
    """
    m, n, k = _dimensions(m=m, n=n, k=k)
    checks.number("bytes_per_element", bytes_per_element)
    return (m * k + k * n + m * n) * bytes_per_element


def arithmetic_intensity(flops, bytes):  # noqa: A002 - the issue's name
    """Arithmetic intensity in FLOP per byte: ``flops / bytes`` (Williams et al., 2009).

    Numbers give a float; NumPy arrays of FLOPs or bytes give an array, broadcast.
    """
    flops = _quantity("flops", flops, strict=False)
    moved = _quantity("bytes", bytes)
    return flops / moved


def matmul_intensity(m: int, n: int, k: int, bytes_per_element: float) -> float:
    """FLOP per byte of an m x k by k x n product: 2mnk / (bytes_per_element x (mk + kn + mn))."""
    return arithmetic_intensity(matmul_flops(m, n, k), matmul_bytes(m, n, k, bytes_per_element))


def attainable_flops(peak_flops, bandwidth_bytes_per_s, intensity):
    """The roofline: min(peak_flops, bandwidth_bytes_per_s x intensity), in FLOP/s.

    ``intensity`` in FLOP per byte (Williams, Waterman & Patterson, CACM 52(4), 2009). Scalars
    give a float; a NumPy array for any argument gives an array, broadcast, e.g. the roof over
    1,000 intensities in one call.
    """
    peak = _quantity("peak_flops", peak_flops)
    bandwidth = _quantity("bandwidth_bytes_per_s", bandwidth_bytes_per_s)
    intensity = _quantity("intensity", intensity, strict=False, allow_inf=True)
    if not any(_is_array(v) for v in (peak, bandwidth, intensity)):
        return min(peak, bandwidth * intensity)
    import numpy as np

    return np.minimum(peak, bandwidth * intensity)


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
        checks.number("peak_flops", self.peak_flops)
        checks.number("bandwidth_bytes_per_s", self.bandwidth_bytes_per_s)


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
        checks.number("intensity", self.intensity)
        checks.number("flops_per_s", self.flops_per_s)


def roof_of(device, dtype: str | None = None) -> Roof:
    """The :class:`Roof` of a catalog device (a name for ``hardware.get`` or a ``Spec``).

    ``dtype``: which peak to use; None takes the dtype the device computes in
    (``basics.peak_flops``: a T4 has no bf16, so its fp16 peak; a CPU in the catalog has fp32 only).
    """
    spec = hardware.as_spec(device)
    dtype, peak = basics.peak_flops(spec, dtype)
    spec.ridge_point(dtype)  # raises ValueError when the bandwidth is missing
    return Roof(
        label=f"{spec.name}, {dtype} (vendor specification)",
        peak_flops=peak,
        bandwidth_bytes_per_s=spec.bandwidth_bytes_per_s,
        dtype=dtype,
    )
