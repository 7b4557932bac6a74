"""Formatting of SI quantities for people: used only at the edge (tables, labels, the CLI).

Inside the package every quantity is a plain float in SI units (bytes, seconds, FLOP/s).

Memory is shown in decimal units, as GPU datasheets and price lists count it ("H100 80 GB"):
1 GB = 10^9 bytes (:data:`GB_DEFINITION`). Binary units (GiB = 2^30 bytes) only where a tool
the learner runs counts that way (nvidia-smi's MiB, PyTorch's memory summary, Linux's cache
sizes), with ``binary=True`` and a word saying which tool.
"""

import math

_DECIMAL_PREFIXES = ("", "k", "M", "G", "T", "P", "E")
_BINARY_PREFIXES = ("", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei")


def _scaled(value: float, base: float, prefixes: tuple) -> tuple:
    """Return (value / base**i, prefixes[i]) with the mantissa in [1, base) where possible."""
    if not math.isfinite(value) or value == 0:
        return value, prefixes[0]
    exponent = min(int(math.log(abs(value), base)), len(prefixes) - 1)
    exponent = max(exponent, 0)
    return value / base**exponent, prefixes[exponent]


GB_DEFINITION = "GB = 10^9 bytes, as GPU datasheets count"
_DECIMAL_BYTES = {"B": 1.0, "kB": 1e3, "MB": 1e6, "GB": 1e9, "TB": 1e12}


def format_bytes(n_bytes: float, binary: bool = False, digits: int = 1) -> str:
    """'80.0 GB' (decimal, as datasheets count: the course's unit) or, with ``binary=True``,
    '74.5 GiB' (as nvidia-smi and PyTorch's memory summary count).

    >>> format_bytes(80e9), format_bytes(80e9, binary=True), format_bytes(131072)
    ('80.0 GB', '74.5 GiB', '131.1 kB')
    """
    if binary:
        mantissa, prefix = _scaled(n_bytes, 1024.0, _BINARY_PREFIXES)
    else:
        mantissa, prefix = _scaled(n_bytes, 1000.0, _DECIMAL_PREFIXES)
    return f"{mantissa:.{digits}f} {prefix}B"


def _unit_bytes(unit: str) -> float:
    if unit not in _DECIMAL_BYTES:
        raise ValueError(f"unit={unit!r} is not a decimal byte unit; use one of {', '.join(_DECIMAL_BYTES)}")
    return _DECIMAL_BYTES[unit]


def bytes_in(n_bytes: float, unit: str = "GB") -> float:
    """``n_bytes`` in a decimal ``unit`` ("B", "kB", "MB", "GB", "TB"): a plot's axis values.

    >>> bytes_in(80e9), bytes_in(32 * 2**20, "MB")
    (80.0, 33.554432)
    """
    return n_bytes / _unit_bytes(unit)


def bytes_label(quantity: str, unit: str = "GB") -> str:
    """An axis or column label with the unit defined: bytes_label("memory") -> 'memory (GB = 10^9 bytes)'."""
    exponent = round(math.log10(_unit_bytes(unit)))
    return f"{quantity} ({unit})" if exponent == 0 else f"{quantity} ({unit} = 10^{exponent} bytes)"


def format_rate(per_s: float, unit: str, digits: int = 1) -> str:
    """A decimal rate: format_rate(9.89e14, 'FLOP/s') -> '989.0 TFLOP/s'."""
    mantissa, prefix = _scaled(per_s, 1000.0, _DECIMAL_PREFIXES)
    return f"{mantissa:.{digits}f} {prefix}{unit}"


def format_seconds(seconds: float, digits: int = 3) -> str:
    """A duration with the unit that keeps it readable: '812 µs', '1.25 s', '2.0 h'."""
    magnitude = abs(seconds)
    if magnitude >= 3600:
        return f"{seconds / 3600:.1f} h"
    if magnitude >= 60:
        return f"{seconds / 60:.1f} min"
    for scale, unit in ((1.0, "s"), (1e-3, "ms"), (1e-6, "µs")):
        if magnitude >= scale:
            return f"{seconds / scale:.{digits}g} {unit}"
    return f"{seconds / 1e-9:.{digits}g} ns"
