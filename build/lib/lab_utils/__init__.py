"""Helpers for the course "CPU vs GPU for AI".

One module per idea (see the course's DESIGN): ``machine``, ``timing``, ``hardware``,
``plots``, ``units``, ``course``. Submodules load on first use, so ``import lab_utils``
stays instant and never imports torch.
"""

from importlib import import_module

__version__ = "0.1.0"

_SUBMODULES = ("cli", "course", "hardware", "machine", "plots", "timing", "units")
__all__ = list(_SUBMODULES)


def __getattr__(name):
    """Import a submodule the first time ``lab_utils.<name>`` is used."""
    if name in _SUBMODULES:
        return import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
