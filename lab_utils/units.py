"""Formatting of SI quantities for people: used only at the edge (tables, labels, the CLI).

Inside the package every quantity is a plain float in SI units (bytes, seconds, FLOP/s).
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


def format_bytes(n_bytes: float, binary: bool = True, digits: int = 1) -> str:
    """'80.0 GiB' (binary, as PyTorch and nvidia-smi count) or '80.0 GB' (decimal, as datasheets)."""
    if binary:
        mantissa, prefix = _scaled(n_bytes, 1024.0, _BINARY_PREFIXES)
    else:
        mantissa, prefix = _scaled(n_bytes, 1000.0, _DECIMAL_PREFIXES)
    return f"{mantissa:.{digits}f} {prefix}B"


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
