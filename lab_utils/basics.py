"""The calculators' shared kernels, at the bottom of the calculator layer.

Each formula that more than one calculator needs has its one owner here; ``memory``,
``serving``, ``economics``, ``advisor`` and the rest import it and never write it again.
Pure arithmetic: no torch, no clock, no screen. It imports only the data layer.
"""

from __future__ import annotations
