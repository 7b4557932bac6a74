"""Helpers for the course "CPU vs GPU for AI".

One module per idea (see the module docstrings): ``machine``, ``timing``, ``hardware``,
``llms``, ``models``, ``plots``, ``units``, ``course`` and more. Submodules load on first
use, so ``import lab_utils`` stays instant; only ``models`` imports torch when it loads,
and the others import it lazily, inside the functions that run tensors.
"""

import pkgutil
from importlib import import_module

__version__ = "0.1.0"

SUBMODULES = tuple(sorted(info.name for info in pkgutil.iter_modules(__path__)))
__all__ = list(SUBMODULES)


def __getattr__(name):
    """Import a submodule the first time ``lab_utils.<name>`` is used."""
    if name in SUBMODULES:
        return import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
