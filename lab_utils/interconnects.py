"""How GPUs talk: NVLink between GPUs of one server, PCIe to the host, per catalog device.

Read from ``lab_utils/data/interconnects.toml`` (each record with its source and date). Bytes/s
are one direction (vendors often add both directions: NVLink 4 on the H100 SXM is 900 GB/s in
total, 450 GB/s each way). Pure Python: no torch.

>>> h100 = get("h100")
>>> h100.nvlink_generation, h100.nvlink_bytes_per_s_each_way
(4, 450000000000.0)
>>> round(h100.pcie_bytes_per_s_each_way / 1e9)
63
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from lab_utils import catalogs, hardware

__all__ = ["Interconnect", "catalog", "get"]

_DATA_FILE = "interconnects.toml"

PCIE_TRANSFERS_PER_S = {3: 8e9, 4: 16e9, 5: 32e9, 6: 64e9}
"""Transfers per second per lane by PCIe generation (PCI-SIG)."""


@dataclass(frozen=True)
class Interconnect:
    """One device's links: NVLink generation (0: none) and bytes/s each way, PCIe generation
    and lanes; source and date of the figures; note (e.g. a bridge between two cards only)."""

    name: str
    nvlink_generation: int
    nvlink_bytes_per_s_each_way: float
    pcie_generation: int
    pcie_lanes: int
    source: str
    source_date: str
    note: str | None = None

    @property
    def pcie_bytes_per_s_each_way(self) -> float:
        """Raw PCIe bytes/s one way: lanes x transfers/s x 128/130 (encoding, Gen3 to Gen5) / 8.
        Gen5 x16: 63 GB/s. Gen6 (FLIT encoding) is taken at the raw rate."""
        encoding = 1.0 if self.pcie_generation >= 6 else 128 / 130
        return self.pcie_lanes * PCIE_TRANSFERS_PER_S[self.pcie_generation] * encoding / 8


@functools.cache
def _load() -> dict[str, Interconnect]:
    found = {}
    for record in catalogs.load(_DATA_FILE, "interconnect"):
        link = Interconnect(**record)
        where = f"lab_utils/data/{_DATA_FILE}: {link.name!r}"
        if hardware.get(link.name).name != link.name:
            raise ValueError(f"{where}: name must be the catalog's spelling, {hardware.get(link.name).name!r}")
        if link.pcie_generation not in PCIE_TRANSFERS_PER_S:
            raise ValueError(f"{where}: pcie_generation must be one of {tuple(PCIE_TRANSFERS_PER_S)}")
        if (link.nvlink_generation == 0) != (link.nvlink_bytes_per_s_each_way == 0):
            raise ValueError(f"{where}: NVLink generation 0 goes with 0 bytes/s, and only it")
        found[link.name] = link
    return found


def get(name: str) -> Interconnect:
    """The links of the catalog device ``name`` (any spelling ``hardware.get`` accepts);
    ValueError when the device or its links are not in the data."""
    device = hardware.get(name).name
    links = _load()
    if device not in links:
        raise ValueError(f"name={name!r}: {device} has no record in lab_utils/data/{_DATA_FILE}; "
                         f"known: {', '.join(links)}")
    return links[device]


def catalog() -> tuple[Interconnect, ...]:
    """Every record, in file order."""
    return tuple(_load().values())
