"""Serving engines as data: what vLLM, TensorRT-LLM, transformers or llama.cpp reach of the bounds.

A :class:`Profile` (one record of ``lab_utils/data/engines.toml``, each with its source, date and
how its figures were derived) turns bounds into an estimate (:func:`apply`)::

    prefill time     = prefill bound / prefill_efficiency + per_request_s
    decode step time = decode bound / decode_efficiency[weight bits] + per_step_s
                       + weight_format_per_step_s[weight bits]

Efficiencies are at most 1 and overheads at least 0, so an engine is never faster than the
bound. A weight format or figure that no source gives is left out, never guessed: :func:`apply`
takes it from the nearest sourced regime of the same engine (never the bound) and says so in
:attr:`EngineTimes.notes` ("vllm's compute: no published figure; its decode figure (0.74) stands
in"); ``unsourced`` names such figures. The default
engine is the one a practitioner runs on the device (:func:`default_for`, the ``engine``
assumption: vLLM on GPUs, llama.cpp on Apple silicon). Pure Python: no torch.

>>> get("llama.cpp-metal").decode_efficiency
{4: 0.68, 8: 0.79, 16: 0.86}
>>> times = apply("llama.cpp-metal", weight_bytes_per_param=2.0, prefill_s=0.1, batch_prefill_s=0.1,
...               decode_step_s=0.0676)
>>> round(1 / times.decode_step_s, 2)  # tokens/s: 14.8 bound x 0.86
12.72
"""

from __future__ import annotations

import dataclasses
import functools
import math
from dataclasses import dataclass

from lab_utils import assumptions, catalogs, checks, hardware, lookup

__all__ = [
    "EngineTimes",
    "Profile",
    "Source",
    "StepTime",
    "apply",
    "catalog",
    "default_for",
    "get",
    "step_time",
    "step_timer",
    "weight_bits",
]

_DATA_FILE = "engines.toml"
_ORIGIN = f"lab_utils/data/{_DATA_FILE}"
_FORMAT_TOLERANCE = 1.3
"""A weight format matches a profile's figure for b bits when its bits are within this factor of
b (Q4_K_M's 4.9 bits count as 4-bit, Q6_K's 6.6 as 8-bit; 32-bit weights match no 16-bit figure)."""

_RECORD_KEYS = {
    "name",
    "aliases",
    "description",
    "decode_efficiency",
    "compute_efficiency",
    "prefill_efficiency",
    "per_request_s",
    "per_step_s",
    "weight_format_per_step_s",
    "unsourced",
    "title",
    "source",
    "source_date",
    "url",
    "cite",
    "derived",
    "further_sources",
}
_SOURCE_KEYS = {"figures", "title", "source", "source_date", "url", "cite", "derived"}


@dataclass(frozen=True)
class Source:
    """Another published measurement a profile's figures come from: ``figures`` (which ones,
    e.g. "decode_efficiency[8]"), ``title``, ``source`` (publisher), ``source_date`` (YYYY-MM),
    ``url``, ``cite`` (its key in book/references.bib) and ``derived`` (the arithmetic)."""

    figures: tuple[str, ...]
    title: str
    source: str
    source_date: str
    url: str
    cite: str
    derived: str


@dataclass(frozen=True)
class Profile:
    """One engine: ``decode_efficiency`` maps weight bits (4, 8, 16...) to the fraction of the
    bandwidth bound it decodes at; ``prefill_efficiency`` the fraction of the compute bound it
    prefills at; ``per_request_s`` the fixed seconds a request waits for once (scheduling,
    tokenising, launching); ``per_step_s`` the fixed seconds each decode step adds, and
    ``weight_format_per_step_s`` those it adds with weights of some bits only (a kernel's own cost:
    vLLM's 4-bit steps). ``unsourced``
    names the figures no source gave (left at the bound); ``title``, ``source`` (publisher),
    ``source_date`` (YYYY-MM), ``url``, ``cite`` (its key in book/references.bib) and
    ``derived`` say where the figures come from; ``further_sources``: the :class:`Source` of each
    figure another publication gives."""

    name: str
    aliases: tuple[str, ...]
    description: str
    decode_efficiency: dict[int, float]
    prefill_efficiency: float
    per_request_s: float
    per_step_s: float
    unsourced: tuple[str, ...]
    title: str
    source: str
    source_date: str
    url: str | None
    cite: str | None
    derived: str
    compute_efficiency: dict[str, float] = dataclasses.field(default_factory=dict)
    further_sources: tuple[Source, ...] = ()
    weight_format_per_step_s: dict[int, float] = dataclasses.field(default_factory=dict)

    def per_step_for(self, weight_bytes_per_param: float) -> float:
        """The fixed seconds a step adds with weights of ``weight_bytes_per_param`` bytes:
        ``per_step_s`` and the ``weight_format_per_step_s`` of the bits whose decode figure they
        take (the nearest sourced ones)."""
        return self.per_step_s + self.weight_format_per_step_s.get(
            _nearest(self, weight_bits(weight_bytes_per_param)), 0.0
        )

    def source_for(self, figure: str) -> Source:
        """Where ``figure`` (e.g. "decode_efficiency[4]") comes from: the further source naming
        it, else the record's own source.

        >>> get("vllm").source_for("decode_efficiency[4]").source
        'Red Hat AI (Neural Magic)'
        """
        for source in self.further_sources:
            if figure in source.figures:
                return source
        own = (self.title, self.source, self.source_date, self.url, self.cite, self.derived)
        return Source((figure,), *own)

    def decode_efficiency_for(self, weight_bytes_per_param: float) -> float:
        """The decode efficiency of weights of ``weight_bytes_per_param`` bytes (see
        :func:`weight_bits`); ValueError when no source gives this engine a figure for them."""
        bits = weight_bits(weight_bytes_per_param)
        near = min(self.decode_efficiency, key=lambda known: abs(math.log(bits / known)))
        if max(bits / near, near / bits) > _FORMAT_TOLERANCE:
            known = ", ".join(f"{b}-bit" for b in sorted(self.decode_efficiency))
            raise ValueError(
                f"weight_bytes_per_param={weight_bytes_per_param!r} ({bits:g}-bit weights): engine "
                f"{self.name!r} has a sourced decode efficiency only for {known} "
                f"(lab_utils/data/{_DATA_FILE})"
            )
        return self.decode_efficiency[near]


@dataclass(frozen=True)
class EngineTimes:
    """What an engine takes, in seconds: ``ttft_s`` (one prompt's prefill and the request's fixed
    cost), ``batch_prefill_s`` (a batch of prompts, with one fixed cost) and ``decode_step_s``;
    ``notes``: the parts taken at the bound because no source gives the engine a figure."""

    engine: str
    ttft_s: float
    batch_prefill_s: float
    decode_step_s: float
    notes: tuple[str, ...] = ()


def weight_bits(weight_bytes_per_param) -> float:
    """Bits per weight: 8 x ``weight_bytes_per_param`` (2.0 -> 16, 0.5625 for Q4_0 -> 4.5)."""
    return 8 * checks.number("weight_bytes_per_param", weight_bytes_per_param)


def _source(entry: dict, where: str) -> Source:
    if not isinstance(entry, dict) or set(entry) != _SOURCE_KEYS:
        raise ValueError(f"{where}: each further_sources entry needs exactly {sorted(_SOURCE_KEYS)}")
    if not catalogs.DATE.match(entry["source_date"]):
        raise ValueError(
            f"{where}: further_sources source_date must be YYYY-MM, got {entry['source_date']!r}"
        )
    return Source(**{**entry, "figures": tuple(entry["figures"])})


def _profile(record: dict) -> Profile:
    where = f"{_ORIGIN}: [[engine]] {record['name']!r}"
    unknown = set(record) - _RECORD_KEYS
    if unknown:
        raise ValueError(f"{where}: unknown key(s) {sorted(unknown)}; allowed: {sorted(_RECORD_KEYS)}")
    for key in ("title", "derived", "description", "decode_efficiency"):
        if not record.get(key):
            raise ValueError(f"{where} lacks {key}")
    decode = {
        int(bits): checks.number(f"{where}: decode_efficiency[{bits}]", value, maximum=1.0)
        for bits, value in record["decode_efficiency"].items()
    }
    return Profile(
        name=record["name"],
        aliases=tuple(record.get("aliases", ())),
        description=record["description"],
        decode_efficiency=decode,
        prefill_efficiency=checks.number(
            f"{where}: prefill_efficiency", record.get("prefill_efficiency", 1.0), maximum=1.0
        ),
        per_request_s=checks.number(
            f"{where}: per_request_s", record.get("per_request_s", 0.0), strict=False
        ),
        per_step_s=checks.number(f"{where}: per_step_s", record.get("per_step_s", 0.0), strict=False),
        unsourced=tuple(record.get("unsourced", ())),
        title=record["title"],
        source=record["source"],
        source_date=record["source_date"],
        url=record.get("url"),
        cite=record.get("cite"),
        derived=record["derived"],
        compute_efficiency={
            dtype: checks.number(f"{where}: compute_efficiency[{dtype}]", value, maximum=1.0)
            for dtype, value in record.get("compute_efficiency", {}).items()
        },
        further_sources=tuple(_source(entry, where) for entry in record.get("further_sources", ())),
        weight_format_per_step_s=_format_costs(record, decode, where),
    )


def _format_costs(record: dict, decode: dict[int, float], where: str) -> dict[int, float]:
    costs = {}
    for bits, value in record.get("weight_format_per_step_s", {}).items():
        if int(bits) not in decode:
            raise ValueError(
                f"{where}: weight_format_per_step_s[{bits}] has no decode_efficiency[{bits}] beside it"
            )
        costs[int(bits)] = checks.number(f"{where}: weight_format_per_step_s[{bits}]", value, strict=False)
    return costs


@functools.cache
def _load() -> tuple[tuple[Profile, ...], dict]:
    profiles = tuple(_profile(record) for record in catalogs.load(_DATA_FILE, "engine"))
    return profiles, catalogs.index(profiles, _ORIGIN)


def catalog() -> tuple[Profile, ...]:
    """Every engine profile, in file order."""
    return _load()[0]


def default_for(device) -> str:
    """The engine a practitioner runs on ``device`` (a catalog name or ``hardware.Spec``): the
    ``engine`` assumption's entry for Apple silicon ("apple", a name starting "Apple"), else for
    its kind ("gpu", "cpu").

    >>> default_for("H100 SXM"), default_for("Apple M1 Max")
    ('vllm', 'llama.cpp-metal')
    """
    spec = hardware.as_spec(device)
    rule = assumptions.value("engine")
    return rule["apple" if spec.name.startswith("Apple") else spec.kind]


def get(name=None, *, device=None) -> Profile:
    """One profile by name or alias, forgiving case and separators; None: the default engine of
    ``device`` (:func:`default_for`). ValueError naming the allowed engines when ``name`` is not one."""
    if name is None:
        if device is None:
            raise TypeError("engine=None needs a device: the default engine depends on it (default_for)")
        name = default_for(device)
    if not isinstance(name, str):
        raise TypeError(f"engine must be a str naming an engine, got {type(name).__name__} {name!r}")
    profiles, index = _load()
    found = index.get(lookup.key(name))
    if found is None:
        raise ValueError(
            f"engine={name!r} is not in {_ORIGIN}; allowed: " + ", ".join(repr(p.name) for p in profiles)
        )
    return found


def apply(
    engine,
    *,
    weight_bytes_per_param,
    prefill_s,
    batch_prefill_s,
    decode_step_s,
    device=None,
    compute_dtype=None,
) -> EngineTimes:
    """The times ``engine`` (a name, a :class:`Profile`, or None for ``device``'s default) takes,
    given the bounds: one prompt's ``prefill_s``, a batch's ``batch_prefill_s`` and one
    ``decode_step_s`` for weights of ``weight_bytes_per_param`` bytes. Each time is at least its
    bound; a figure no source gives the engine is taken from its nearest sourced regime (never the
    bound), named in ``notes``: decode for other weight bits from the nearest bits' figure,
    prefill from the profile's compute figure, else the decode figure of the bits it computes in
    (``compute_dtype``, the device's dtype for the step: W4A16 weights compute in 16 bits; None:
    the weights' own bits).

    >>> times = apply("vllm", weight_bytes_per_param=0.5, prefill_s=0.1, batch_prefill_s=0.1,
    ...               decode_step_s=0.01, compute_dtype="bf16")
    >>> round(times.decode_step_s * 1e3, 2), round(times.ttft_s - 0.0075, 3)  # 10 / 0.56 + 3.3 ms; 0.1 / 0.74
    (21.16, 0.135)
    >>> for note in times.notes: print(note)
    vllm's compute: no published figure; its 16-bit decode figure (0.74) stands in
    """
    profile = engine if isinstance(engine, Profile) else get(engine, device=device)
    bounds = _checked_bounds(prefill_s, batch_prefill_s, decode_step_s)  # named first, as ever
    found = figures(profile, weight_bytes_per_param=weight_bytes_per_param, compute_dtype=compute_dtype)
    return found.times(*bounds)


@dataclass(frozen=True)
class EngineFigures:
    """What :func:`apply` takes from an engine's profile for one weight format and compute dtype
    (:func:`figures`): the ``prefill_efficiency`` and ``decode_efficiency`` dividing the bounds,
    the fixed ``per_request_s`` and ``per_step_s`` added, the ``notes``; a caller timing many
    batches of one server (``serving.Estimates``) looks them up once."""

    engine: str
    prefill_efficiency: float
    decode_efficiency: float
    per_request_s: float
    per_step_s: float
    notes: tuple[str, ...]

    def times(self, prefill_s, batch_prefill_s, decode_step_s) -> EngineTimes:
        """:func:`apply`'s :class:`EngineTimes` of these bounds."""
        prefill_s, batch_prefill_s, decode_step_s = _checked_bounds(prefill_s, batch_prefill_s, decode_step_s)
        return EngineTimes(
            engine=self.engine,
            ttft_s=prefill_s / self.prefill_efficiency + self.per_request_s,
            batch_prefill_s=batch_prefill_s / self.prefill_efficiency + self.per_request_s,
            decode_step_s=decode_step_s / self.decode_efficiency + self.per_step_s,
            notes=self.notes,
        )


def figures(engine, *, weight_bytes_per_param, device=None, compute_dtype=None) -> EngineFigures:
    """The :class:`EngineFigures` :func:`apply` takes from ``engine`` (a name, a
    :class:`Profile`, or None for ``device``'s default) for weights of ``weight_bytes_per_param``
    bytes computed in ``compute_dtype``."""
    profile = engine if isinstance(engine, Profile) else get(engine, device=device)
    decode, decode_note = _nearest_bits(profile, weight_bytes_per_param)
    prefill, prefill_note = _prefill_figure(profile, compute_dtype, weight_bytes_per_param)
    return EngineFigures(
        engine=profile.name,
        prefill_efficiency=prefill,
        decode_efficiency=decode,
        per_request_s=profile.per_request_s,
        per_step_s=profile.per_step_for(weight_bytes_per_param),
        notes=tuple(note for note in (prefill_note, decode_note) if note),
    )


def _checked_bounds(prefill_s, batch_prefill_s, decode_step_s) -> tuple[float, float, float]:
    """The three bounds :func:`apply` takes, each a number > 0 (checks.number), in this order."""
    return (
        checks.number("prefill_s", prefill_s),
        checks.number("batch_prefill_s", batch_prefill_s),
        checks.number("decode_step_s", decode_step_s),
    )


@dataclass(frozen=True)
class StepTime:
    """One engine step: ``seconds`` and the figures it took (``bandwidth_efficiency``,
    ``compute_efficiency``); ``notes`` names each figure taken from a neighbouring regime for
    want of a source."""

    seconds: float
    bandwidth_efficiency: float
    compute_efficiency: float
    notes: tuple[str, ...] = ()


_DTYPE_BITS = {"fp32": 32, "bf16": 16, "fp16": 16, "fp8": 8, "int8": 8}
"""The bits of a value each compute dtype multiplies: the decode figure of those bits is the
nearest sourced regime of a step computed in it when the engine has no compute figure."""


def _nearest(profile: Profile, bits: float) -> int:
    """The bits of ``profile``'s decode figure nearest to ``bits`` (by ratio)."""
    return min(profile.decode_efficiency, key=lambda known: abs(math.log(bits / known)))


def _nearest_bits(profile: Profile, weight_bytes_per_param) -> tuple[float, str | None]:
    try:
        return profile.decode_efficiency_for(weight_bytes_per_param), None
    except ValueError:
        bits = weight_bits(weight_bytes_per_param)
        near = _nearest(profile, bits)
        return profile.decode_efficiency[near], (
            f"{profile.name} with {bits:g}-bit weights: no published decode figure; its {near}-bit "
            f"figure ({profile.decode_efficiency[near]:g} of the bandwidth) stands in"
        )


def _decode_stand_in(profile: Profile, compute_dtype, weight_bytes_per_param) -> tuple[float, str]:
    """The decode figure standing in for a compute figure no source gives: that of the bits the
    step computes in (``compute_dtype``: W4A16 weights compute in 16 bits, FP8 in 8), or of the
    weights' own bits when the dtype is None or unknown."""
    bits = _DTYPE_BITS.get(compute_dtype) or weight_bits(weight_bytes_per_param)
    near = _nearest(profile, bits)
    value = profile.decode_efficiency[near]
    return (
        value,
        f"{profile.name}'s compute: no published figure; its {near}-bit decode figure ({value:g}) stands in",
    )


def _prefill_figure(profile: Profile, compute_dtype, weight_bytes_per_param) -> tuple[float, str | None]:
    """A prompt's efficiency: the sourced prefill figure, else the profile's compute figure (its
    16-bit one when it has several), else a decode figure (:func:`_decode_stand_in`)."""
    if "prefill_efficiency" not in profile.unsourced:
        return profile.prefill_efficiency, None
    if profile.compute_efficiency:
        return profile.compute_efficiency.get("bf16", next(iter(profile.compute_efficiency.values()))), None
    return _decode_stand_in(profile, compute_dtype, weight_bytes_per_param)


def _compute_figure(profile: Profile, compute_dtype: str, weight_bytes_per_param) -> tuple[float, str | None]:
    if compute_dtype in profile.compute_efficiency:
        return profile.compute_efficiency[compute_dtype], None
    if "prefill_efficiency" not in profile.unsourced and compute_dtype in ("bf16", "fp16"):
        return profile.prefill_efficiency, None
    if profile.compute_efficiency:
        other, value = next(iter(profile.compute_efficiency.items()))
        return value, (
            f"{profile.name} computing in {compute_dtype}: no published figure; its {other} "
            f"figure ({value:g} of the peak) stands in"
        )
    if "prefill_efficiency" not in profile.unsourced:
        return profile.prefill_efficiency, (
            f"{profile.name} computing in {compute_dtype}: no published figure; its 16-bit prefill "
            f"figure ({profile.prefill_efficiency:g} of the peak) stands in"
        )
    return _decode_stand_in(profile, compute_dtype, weight_bytes_per_param)


def step_time(engine, *, compute_s, memory_s, compute_dtype, weight_bytes_per_param, device=None) -> StepTime:
    """What ``engine`` takes for one step whose bound is ``compute_s`` (FLOPs over the peak in
    ``compute_dtype``) and ``memory_s`` (bytes over the bandwidth), by regime:
    max(compute_s / compute efficiency, memory_s / bandwidth efficiency) + the fixed cost of a step
    (:meth:`Profile.per_step_for`).
    The bandwidth efficiency is the decode figure for the weights' bits; the compute efficiency
    the profile's figure for the dtype (else its prefill figure). A figure no source gives is
    taken from the nearest sourced regime of the same engine, never the bound, and named in
    ``notes``.

    >>> round(step_time("tensorrt-llm", compute_s=0.0, memory_s=0.01, compute_dtype="bf16",
    ...                 weight_bytes_per_param=2.0).seconds, 4)  # 10 ms / 0.79
    0.0127
    """
    timer = step_timer(
        engine, compute_dtype=compute_dtype, weight_bytes_per_param=weight_bytes_per_param, device=device
    )
    return timer(compute_s, memory_s)


def step_timer(engine, *, compute_dtype, weight_bytes_per_param, device=None):
    """:func:`step_time` with the engine's figures for ``compute_dtype`` and the weights' bits
    found once: a function (compute_s, memory_s) -> :class:`StepTime`, for a caller that times
    many steps (``lab_utils.replica``'s step loop)."""
    profile = engine if isinstance(engine, Profile) else get(engine, device=device)
    bandwidth, bits_note = _nearest_bits(profile, weight_bytes_per_param)
    compute, compute_note = _compute_figure(profile, compute_dtype, weight_bytes_per_param)
    per_step_s = profile.per_step_for(weight_bytes_per_param)
    notes = tuple(note for note in (bits_note, compute_note) if note)

    def timed(compute_s, memory_s) -> StepTime:
        compute_s = checks.number("compute_s", compute_s, strict=False)
        memory_s = checks.number("memory_s", memory_s, strict=False)
        seconds = max(compute_s / compute, memory_s / bandwidth) + per_step_s
        return StepTime(seconds, bandwidth, compute, notes)

    return timed
