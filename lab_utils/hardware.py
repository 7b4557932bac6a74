"""The hardware spec catalog: datasheet figures for the GPUs and CPUs the course compares.

Figures live in ``lab_utils/data/hardware.toml`` (each device with its source and date); this
module reads them once and hands out frozen :class:`Spec` records in plain SI units: bytes,
bytes/s, FLOP/s (dense peaks, never NVIDIA's 2x sparse figures), watts.

>>> spec = get("h100")
>>> spec.name, spec.bandwidth_bytes_per_s
('H100 SXM', 3350000000000.0)
>>> round(spec.ridge_point("bf16"))
295

Standard library only (no torch), so importing it is instant.
"""

from __future__ import annotations

import dataclasses
import functools
import types
from collections.abc import Mapping

from lab_utils import catalogs, lookup

__all__ = ["DTYPES", "KINDS", "Spec", "as_spec", "catalog", "get"]

DTYPES = ("fp32", "tf32", "bf16", "fp16", "fp8", "int8")
"""Keys allowed in :attr:`Spec.peak_flops`, widest first."""

KINDS = ("gpu", "cpu")

_DATA_FILE = "hardware.toml"

# Keys a [[device]] table may hold, and the type each must have.
_STR_KEYS = ("name", "kind", "memory_type", "matrix_units", "source", "source_date", "note")
_INT_KEYS = (
    "memory_bytes",
    "tdp_watts",
    "sm_count",
    "fp32_lanes_per_sm",
    "l2_bytes",
    "cores",
    "fp32_flops_per_cycle_per_core",
    "bf16_flops_per_cycle_per_core",
    "int8_ops_per_cycle_per_core",
    "memory_channels",
    "bytes_per_transfer",
)
_FLOAT_KEYS = ("bandwidth_bytes_per_s", "clock_hz", "memory_transfers_per_s")
_REQUIRED_KEYS = ("name", "kind", "source", "source_date")
_GPU_ONLY_KEYS = ("sm_count", "fp32_lanes_per_sm", "l2_bytes")
_CPU_ONLY_KEYS = (
    "cores",
    "clock_hz",
    "fp32_flops_per_cycle_per_core",
    "bf16_flops_per_cycle_per_core",
    "int8_ops_per_cycle_per_core",
    "memory_channels",
    "memory_transfers_per_s",
    "bytes_per_transfer",
)
_CHANNEL_KEYS = ("memory_channels", "memory_transfers_per_s", "bytes_per_transfer")
_PEAK_INPUT_KEYS = ("cores", "clock_hz", "fp32_flops_per_cycle_per_core")
# CPU matrix units (Intel AMX; AVX-512 VNNI/BF16): per-cycle rates -> the peak of that dtype.
_MATRIX_RATE_KEYS = {"bf16": "bf16_flops_per_cycle_per_core", "int8": "int8_ops_per_cycle_per_core"}
_ALLOWED_KEYS = frozenset(_STR_KEYS + _INT_KEYS + _FLOAT_KEYS + ("aliases", "peak_flops"))


@dataclasses.dataclass(frozen=True, kw_only=True)
class Spec:
    """One device's datasheet figures, in SI units.

    name, kind ("gpu" | "cpu"), aliases (other spellings ``get`` accepts);
    memory_bytes (nominal capacity; for a CPU the most one socket supports), memory_type;
    bandwidth_bytes_per_s (theoretical peak, None when unpublished);
    peak_flops: read-only mapping dtype -> dense peak FLOP/s (OP/s for int8), keys among
    :data:`DTYPES`, only those the device has; tdp_watts;
    GPUs: sm_count, fp32_lanes_per_sm, l2_bytes (the L2 cache: a bandwidth test must move
    buffers well past it, or it measures the cache); CPUs: cores, clock_hz (base),
    fp32_flops_per_cycle_per_core, bf16_flops_per_cycle_per_core and int8_ops_per_cycle_per_core
    (matrix units: Intel AMX), matrix_units (which: "AMX-BF16, AMX-INT8, AVX-512 VNNI, ...");
    source and source_date (YYYY or YYYY-MM) of the figures;
    note. Unknown figures are None.
    """

    name: str
    kind: str
    aliases: tuple[str, ...] = ()
    memory_bytes: int | None = None
    memory_type: str | None = None
    bandwidth_bytes_per_s: float | None = None
    peak_flops: Mapping[str, float] = dataclasses.field(default_factory=dict, hash=False)
    tdp_watts: int | None = None
    sm_count: int | None = None
    fp32_lanes_per_sm: int | None = None
    l2_bytes: int | None = None
    cores: int | None = None
    clock_hz: float | None = None
    fp32_flops_per_cycle_per_core: int | None = None
    bf16_flops_per_cycle_per_core: int | None = None
    int8_ops_per_cycle_per_core: int | None = None
    matrix_units: str | None = None
    source: str = ""
    source_date: str = ""
    note: str | None = None

    def __post_init__(self) -> None:
        # Freeze the containers too, so a Spec cannot be changed after it is made.
        object.__setattr__(self, "aliases", tuple(self.aliases))
        object.__setattr__(self, "peak_flops", types.MappingProxyType(dict(self.peak_flops)))

    def __reduce__(self):
        # mappingproxy cannot be pickled or deep-copied; rebuild from a plain dict instead.
        fields = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        fields["peak_flops"] = dict(self.peak_flops)
        return (functools.partial(Spec, **fields), ())

    @property
    def fp32_lanes(self) -> int | None:
        """FP32 FMA lanes: CUDA cores on a GPU (SMs x lanes per SM); on a CPU
        cores x FP32 FLOP per cycle / 2 (an FMA counts 2 FLOP). None when unknown."""
        if self.sm_count is not None and self.fp32_lanes_per_sm is not None:
            return self.sm_count * self.fp32_lanes_per_sm
        if self.cores is not None and self.fp32_flops_per_cycle_per_core is not None:
            return self.cores * self.fp32_flops_per_cycle_per_core // 2
        return None

    def ridge_point(self, dtype: str = "bf16") -> float:
        """Roofline ridge point in FLOP per byte: ``peak_flops[dtype] / bandwidth_bytes_per_s``.

        Kernels with a lower arithmetic intensity are bandwidth bound on this device
        (Williams, Waterman & Patterson, CACM 52(4), 2009).
        """
        if not isinstance(dtype, str):
            raise TypeError(f"dtype must be a str, one of {DTYPES}; got {dtype!r}")
        has = ", ".join(self.peak_flops) or "none"
        if dtype not in self.peak_flops:
            if dtype not in DTYPES:
                raise ValueError(f"dtype={dtype!r} is not one of {DTYPES}; {self.name} has: {has}")
            raise ValueError(
                f"dtype={dtype!r}: {self.name} has no {dtype} peak in the catalog; it has: {has}"
            )
        if not self.bandwidth_bytes_per_s:
            raise ValueError(
                f"dtype={dtype!r}: {self.name} has no published memory bandwidth, so it has no ridge point"
            )
        return self.peak_flops[dtype] / self.bandwidth_bytes_per_s


def _check_number(where: str, key: str, value: object, kind: type) -> float | int:
    """Return ``value`` if it is a positive number of the right kind, else raise ValueError."""
    ok_types = (int,) if kind is int else (int, float)
    if isinstance(value, bool) or not isinstance(value, ok_types) or not value > 0:
        wanted = "a positive integer" if kind is int else "a positive number"
        raise ValueError(f"{where}: {key} must be {wanted}, got {value!r}")
    return kind(value)


def _spec_from_table(table: object, index: int, origin: str) -> Spec:
    """Check one [[device]] table and turn it into a Spec (computing CPU figures)."""
    where = f"{origin}: device #{index + 1}"
    if not isinstance(table, dict):
        raise ValueError(f"{where} must be a table, got {table!r}")
    if isinstance(table.get("name"), str):
        where += f" ({table['name']!r})"
    missing = [k for k in _REQUIRED_KEYS if k not in table]
    if missing:
        raise ValueError(f"{where} lacks required key(s): {', '.join(missing)}")
    unknown = sorted(set(table) - _ALLOWED_KEYS)
    if unknown:
        raise ValueError(
            f"{where}: unknown key(s) {', '.join(unknown)}; allowed: {', '.join(sorted(_ALLOWED_KEYS))}"
        )

    fields: dict[str, object] = {}
    for key in _STR_KEYS:
        if key in table:
            if not isinstance(table[key], str) or not table[key].strip():
                raise ValueError(f"{where}: {key} must be a non-empty string, got {table[key]!r}")
            fields[key] = table[key]
    for key in _INT_KEYS:
        if key in table:
            fields[key] = _check_number(where, key, table[key], int)
    for key in _FLOAT_KEYS:
        if key in table:
            fields[key] = _check_number(where, key, table[key], float)

    kind = fields["kind"]
    if kind not in KINDS:
        raise ValueError(f"{where}: kind must be one of {KINDS}, got {kind!r}")
    if not catalogs.DATE.match(fields["source_date"]):
        raise ValueError(f"{where}: source_date must be YYYY or YYYY-MM, got {fields['source_date']!r}")
    wrong_kind = [k for k in (_CPU_ONLY_KEYS if kind == "gpu" else _GPU_ONLY_KEYS) if k in table]
    if wrong_kind:
        raise ValueError(f"{where}: key(s) {', '.join(wrong_kind)} do not apply to a {kind}")

    aliases = table.get("aliases", [])
    if not isinstance(aliases, list) or not all(isinstance(a, str) and lookup.key(a) for a in aliases):
        raise ValueError(f"{where}: aliases must be a list of non-empty strings, got {aliases!r}")
    fields["aliases"] = tuple(aliases)

    peaks = table.get("peak_flops", {})
    if not isinstance(peaks, dict):
        raise ValueError(f"{where}: peak_flops must be a table, got {peaks!r}")
    bad = [k for k in peaks if k not in DTYPES]
    if bad:
        raise ValueError(f"{where}: peak_flops key(s) {', '.join(map(repr, bad))} not among {DTYPES}")
    peak_flops = {
        dtype: _check_number(where, f"peak_flops.{dtype}", peaks[dtype], float)
        for dtype in DTYPES
        if dtype in peaks
    }

    if kind == "cpu":
        # Derived CPU figures: computed here from the stored inputs, never typed twice.
        if any(k in table for k in _CHANNEL_KEYS):
            if not all(k in table for k in _CHANNEL_KEYS):
                raise ValueError(f"{where}: bandwidth needs all of {', '.join(_CHANNEL_KEYS)}")
            if "bandwidth_bytes_per_s" in table:
                raise ValueError(
                    f"{where}: give bandwidth_bytes_per_s or {', '.join(_CHANNEL_KEYS)}, not both"
                )
            fields["bandwidth_bytes_per_s"] = float(
                fields["memory_channels"] * fields["bytes_per_transfer"] * fields["memory_transfers_per_s"]
            )
        if all(k in table for k in _PEAK_INPUT_KEYS):
            if "fp32" in peak_flops:
                raise ValueError(
                    f"{where}: peak_flops.fp32 is computed from {', '.join(_PEAK_INPUT_KEYS)}; "
                    f"do not give it as well"
                )
            peak_flops["fp32"] = float(
                fields["cores"] * fields["clock_hz"] * fields["fp32_flops_per_cycle_per_core"]
            )
        for dtype, key in _MATRIX_RATE_KEYS.items():
            if key in table:
                if dtype in peak_flops:
                    raise ValueError(
                        f"{where}: peak_flops.{dtype} is computed from {key}; do not give it as well"
                    )
                if not all(k in table for k in ("cores", "clock_hz")):
                    raise ValueError(f"{where}: {key} needs cores and clock_hz")
                peak_flops[dtype] = float(fields["cores"] * fields["clock_hz"] * fields[key])
        # keep the DTYPES order
        peak_flops = {d: peak_flops[d] for d in DTYPES if d in peak_flops}
        for key in _CHANNEL_KEYS:
            fields.pop(key, None)

    fields["peak_flops"] = peak_flops
    return Spec(**fields)


def _parse_catalog(text: str, origin: str = _DATA_FILE) -> tuple[Spec, ...]:
    """Parse and validate catalog TOML text; raise ValueError saying what is wrong where."""
    tables = catalogs.parse(text, "device", origin)
    specs = tuple(_spec_from_table(t, i, origin) for i, t in enumerate(tables))
    catalogs.index(specs, origin)  # names and aliases unique
    return specs


@functools.cache
def _load() -> tuple[tuple[Spec, ...], dict[str, Spec]]:
    """The catalog, parsed once: (GPUs then CPUs, each in file order; lookup key -> Spec)."""
    origin = f"lab_utils/data/{_DATA_FILE}"
    specs = tuple(
        sorted(_parse_catalog(catalogs.text(_DATA_FILE), origin), key=lambda s: KINDS.index(s.kind))
    )
    return specs, catalogs.index(specs, origin)


def as_spec(device) -> Spec:
    """``device`` itself when it is a :class:`Spec`, else ``get(device)`` (a catalog name)."""
    if isinstance(device, Spec):
        return device
    if not isinstance(device, str):
        raise TypeError(
            f"device must be a catalog name or a hardware.Spec, got {type(device).__name__} {device!r}"
        )
    return get(device)


def get(name: str) -> Spec:
    """The :class:`Spec` of one device, by name or alias.

    Forgiving: case, spaces, hyphens and underscores are ignored, so "H100 SXM",
    "h100-sxm", "H100_SXM" and the alias "h100" all give the H100 SXM. An unknown name
    raises ValueError listing the closest names.
    """
    specs, index = _load()
    return lookup.find(name, index, "hardware catalog", [s.name for s in specs])


def catalog(kind: str | None = None) -> tuple[Spec, ...]:
    """Every device in the catalog, GPUs first, each kind in file order; ``kind`` "gpu" or "cpu" filters."""
    if kind is not None and not isinstance(kind, str):
        raise TypeError(f"kind must be None, 'gpu' or 'cpu', got {type(kind).__name__} {kind!r}")
    specs, _ = _load()
    if kind is None:
        return specs
    if kind.lower() not in KINDS:
        raise ValueError(f"kind={kind!r} is not allowed; use None, 'gpu' or 'cpu'")
    return tuple(s for s in specs if s.kind == kind.lower())
