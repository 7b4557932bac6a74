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

from lab_utils import catalogs, checks, hardware

__all__ = ["PCIE_TRANSFERS_PER_S_PER_LANE", "Interconnect", "catalog", "get", "pcie_bytes_per_s"]

_DATA_FILE = "interconnects.toml"

PCIE_TRANSFERS_PER_S_PER_LANE = {3: 8e9, 4: 16e9, 5: 32e9}
"""Signalling rate of one PCI Express lane, transfers (bits) per second, by generation
(PCI-SIG base specifications 3.0, 4.0, 5.0); all three encode 128 bits in 130."""


def pcie_bytes_per_s(generation: int = 4, lanes: int = 16) -> float:
    """Bytes per second in one direction of a PCI Express link: rate per lane x lanes x 128/130 / 8.

    PCIe 4.0 x16: 16 GT/s x 16 x 128/130 / 8 = 31.5 GB/s. Packet headers and the driver take a
    further share, so copies reach less (``torch`` copies from pinned memory come closest).
    """
    if isinstance(generation, bool) or not isinstance(generation, int):
        raise TypeError(f"generation must be an int, one of {tuple(PCIE_TRANSFERS_PER_S_PER_LANE)}")
    if generation not in PCIE_TRANSFERS_PER_S_PER_LANE:
        raise ValueError(f"generation={generation!r}: allowed {tuple(PCIE_TRANSFERS_PER_S_PER_LANE)}")
    lanes = checks.count("lanes", lanes, minimum=1)
    if lanes not in (1, 2, 4, 8, 16):
        raise ValueError(f"lanes={lanes!r}: a PCIe link has 1, 2, 4, 8 or 16 lanes")
    return PCIE_TRANSFERS_PER_S_PER_LANE[generation] * lanes * 128 / 130 / 8


@dataclass(frozen=True)
class Interconnect:
    """One device's links: NVLink generation (0: none) and bytes/s each way, PCIe generation
    and lanes; source and date of the figures; note (e.g. a bridge between two cards only);
    ``nvlink_bridge_gpus``: the cards one NVLink bridge joins (None: an NVLink switch joins every
    GPU of the server, as in HGX and DGX servers)."""

    name: str
    nvlink_generation: int
    nvlink_bytes_per_s_each_way: float
    pcie_generation: int
    pcie_lanes: int
    source: str
    source_date: str
    note: str | None = None
    nvlink_bridge_gpus: int | None = None

    @property
    def pcie_bytes_per_s_each_way(self) -> float:
        """PCIe bytes/s one way (``pcie_bytes_per_s``): Gen5 x16 63 GB/s."""
        return pcie_bytes_per_s(self.pcie_generation, self.pcie_lanes)

    @property
    def switched(self) -> bool:
        """True when an NVLink switch joins every GPU of the server (an HGX/DGX server, whose
        GPUs each have their own network port); False for PCIe cards, bridged or not."""
        return self.nvlink_generation > 0 and self.nvlink_bridge_gpus is None

    def in_server_bytes_per_s(self, n_gpus: int) -> float:
        """Bytes/s each way one GPU sends to the others of a server of ``n_gpus``: NVLink when a
        switch or one bridge joins them all, else PCIe (a bridge joins only its cards)."""
        n_gpus = checks.count("n_gpus", n_gpus)
        if self.switched or (self.nvlink_bridge_gpus and n_gpus <= self.nvlink_bridge_gpus):
            return self.nvlink_bytes_per_s_each_way
        return self.pcie_bytes_per_s_each_way


@functools.cache
def _load() -> dict[str, Interconnect]:
    found = {}
    for record in catalogs.load(_DATA_FILE, "interconnect"):
        link = Interconnect(**record)
        where = f"lab_utils/data/{_DATA_FILE}: {link.name!r}"
        if hardware.get(link.name).name != link.name:
            raise ValueError(
                f"{where}: name must be the catalog's spelling, {hardware.get(link.name).name!r}"
            )
        if link.pcie_generation not in PCIE_TRANSFERS_PER_S_PER_LANE:
            raise ValueError(
                f"{where}: pcie_generation must be one of {tuple(PCIE_TRANSFERS_PER_S_PER_LANE)}"
            )
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
        raise ValueError(
            f"name={name!r}: {device} has no record in lab_utils/data/{_DATA_FILE}; known: {', '.join(links)}"
        )
    return links[device]


def catalog() -> tuple[Interconnect, ...]:
    """Every record, in file order."""
    return tuple(_load().values())
