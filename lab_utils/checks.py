"""Argument checks shared by every calculator: one place, one wording.

Each check returns the value (as a float or an int) when it is allowed, and otherwise raises
TypeError (wrong type) or ValueError (wrong value) whose message names the parameter, the value
and what is allowed, e.g. ``n_params=-1: must be a finite number > 0``. The command line turns
these messages into one line and exit status 2. No torch, no numpy: pure Python.
"""

from __future__ import annotations

import math
import numbers as _numbers
from collections.abc import Iterable

_INF = math.inf


class NotAnIntegerError(TypeError, ValueError):
    """A float (or other real) given where a count is expected: the wrong type and the wrong
    value at once, so ``except TypeError`` and ``except ValueError`` both catch it."""


def _is_real(value) -> bool:
    if type(value) is float or type(value) is int:  # the common case, without the ABC checks' cost
        return True
    return not isinstance(value, bool) and isinstance(value, _numbers.Real)


def number(
    name: str,
    value,
    *,
    minimum: float = 0.0,
    strict: bool = True,
    maximum: float = math.inf,
    allow_inf: bool = False,
) -> float:
    """``value`` as a float if it is a number above ``minimum`` (or equal, when not ``strict``)
    and at most ``maximum``; finite unless ``allow_inf``. Else TypeError / ValueError naming
    ``name``, the value and the allowed range."""
    if type(value) is float and minimum < value < _INF and value <= maximum:  # allowed, whatever else asked
        return value  # the common case, answered first: calculators check values already checked
    if not _is_real(value):
        raise TypeError(f"{name} must be a number, got {type(value).__name__} {value!r}")
    given, value = value, float(value)
    relation = ">" if strict else ">="
    too_low = value < minimum or (strict and value == minimum)
    if math.isnan(value) or too_low or value > maximum or (math.isinf(value) and not allow_inf):
        kind = "number" if allow_inf else "finite number"
        upper = f" and <= {maximum:g}" if math.isfinite(maximum) else ""
        raise ValueError(f"{name}={given!r}: must be a {kind} {relation} {minimum:g}{upper}")
    return value


def fraction(name: str, value) -> float:
    """A number from 0 to 1 inclusive (a share, an efficiency, a parallel fraction)."""
    if not _is_real(value):
        raise TypeError(f"{name} must be a number between 0 and 1, got {type(value).__name__} {value!r}")
    if not 0.0 <= value <= 1.0:  # also refuses NaN
        raise ValueError(f"{name}={value!r}: must be between 0 and 1")
    return float(value)


def count(name: str, value, *, minimum: int = 1, what: str | None = None) -> int:
    """``value`` as an int if it is an integer >= ``minimum`` (``what`` words the wanted type in
    the message, e.g. "a positive int (a matrix dimension)"). A bool is refused (TypeError); a
    float such as 2.5 raises :class:`NotAnIntegerError` (both TypeError and ValueError)."""
    if type(value) is not int and (isinstance(value, bool) or not isinstance(value, _numbers.Integral)):
        error = NotAnIntegerError if _is_real(value) else TypeError
        raise error(f"{name} must be {what or f'an int >= {minimum}'}, got {type(value).__name__} {value!r}")
    if value < minimum:
        raise ValueError(f"{name}={value!r}: must be an integer >= {minimum}")
    return int(value)


def choice(name: str, value, allowed) -> str:
    """``value`` if it is one of the strings ``allowed``; else ValueError listing them."""
    allowed = tuple(allowed)
    if not isinstance(value, str) or value not in allowed:
        raise ValueError(f"{name}={value!r} is not allowed; use one of {allowed}")
    return value


def sequence(name: str, values) -> list:
    """``values`` as a list if it is an iterable that is not a string; else TypeError."""
    if isinstance(values, (str, bytes)) or not isinstance(values, Iterable):
        raise TypeError(f"{name} must be a sequence of numbers, got {type(values).__name__} {values!r}")
    return list(values)


def numbers(name: str, values, **limits) -> list[float]:
    """Every item of a sequence checked by :func:`number` (same ``limits``), named ``name[i]``."""
    return [number(f"{name}[{i}]", v, **limits) for i, v in enumerate(sequence(name, values))]
