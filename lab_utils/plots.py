"""Every figure of the course: one colour-blind-safe look, labelled axes, and the course's charts.

Every figure has a title and both axes name their unit, e.g. "matrix size n (elements)".
Alt text is set where the figure is shown (the notebook cell's ``mystnb.image.alt`` metadata).
Charts drawn from the calculators: :func:`roofline` (``lab_utils.roofline``). matplotlib
loads when a figure is made.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import NamedTuple

from lab_utils import checks, hardware
from lab_utils import roofline as _roofline

# Okabe & Ito (2008), "Color Universal Design": distinguishable with every common colour-vision deficiency.
PALETTE = {
    "blue": "#0072B2",
    "orange": "#E69F00",
    "green": "#009E73",
    "vermillion": "#D55E00",
    "sky": "#56B4E9",
    "purple": "#CC79A7",
    "yellow": "#F0E442",
    "black": "#000000",
}
# The order of colours for series on one axis: strongest contrasts first.
CYCLE = ("blue", "orange", "green", "vermillion", "sky", "purple", "black", "yellow")

_UNIT_IN_LABEL = re.compile(r"\(.+\)\s*$")

# matplotlib rcParams of the course style; apply_style() adds the colour cycle.
STYLE = {
    "axes.grid": True,
    "grid.alpha": 0.3,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "figure.figsize": (7.0, 4.2),
    "figure.dpi": 100,
    "savefig.dpi": 150,
    "font.size": 11,
    "axes.titlesize": 12,
    "legend.frameon": False,
}


def apply_style() -> None:
    """Set matplotlib's defaults to the course style (palette, grid, sizes)."""
    import matplotlib as mpl
    from cycler import cycler

    mpl.rcParams.update(STYLE)
    mpl.rcParams["axes.prop_cycle"] = cycler(color=[PALETTE[name] for name in CYCLE])


def figure(title: str, xlabel: str, ylabel: str, **subplots_kwargs):
    """A new (fig, ax) in the course style, titled and with both axes labelled with units.

    Labels must end with the unit in parentheses, e.g. "time per call (s)".
    """
    import matplotlib.pyplot as plt

    if not isinstance(title, str) or not title.strip():
        raise ValueError(f"title={title!r}: every figure needs a non-empty title")
    for name, label in (("xlabel", xlabel), ("ylabel", ylabel)):
        if not isinstance(label, str) or not _UNIT_IN_LABEL.search(label):
            raise ValueError(f"{name}={label!r}: end the label with its unit in parentheses, e.g. 'time (s)'")
    apply_style()
    fig, ax = plt.subplots(**subplots_kwargs)
    ax.set_title(title)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    return fig, ax


# --- charts of the calculators ---------------------------------------------------------------


def roofline(
    points: Iterable[_roofline.Point] = (),
    roofs: Iterable[_roofline.Roof] = (),
    *,
    devices=_roofline.DEFAULT_DEVICES,
    intensity_range: tuple[float, float] = (0.1, 1e4),
    title: str = "Roofline: attainable and measured throughput",
):
    """Draw rooflines and measured points on log-log axes; return ``(fig, ax)``.

    ``devices``: catalog devices drawn as solid roofs (names or ``hardware.Spec``; see
    ``roofline.roof_of``); ``roofs``: extra ``roofline.Roof`` lines drawn dashed, e.g. the
    learner's machine with its measured bandwidth and best measured FLOP/s; ``points``: measured
    kernels (``roofline.Point``). Axes: arithmetic intensity (FLOP/byte) against FLOP/s.
    """
    import numpy as np

    if isinstance(devices, (str, hardware.Spec)):
        raise TypeError(f"devices must be a sequence of names or Specs, got a single {devices!r}")
    device_roofs = [_roofline.roof_of(device) for device in devices]
    extra_roofs = list(roofs)
    points = list(points)
    for name, items, kind in (("roofs", extra_roofs, _roofline.Roof), ("points", points, _roofline.Point)):
        wrong = [item for item in items if not isinstance(item, kind)]
        if wrong:
            raise TypeError(f"{name} must hold lab_utils.roofline.{kind.__name__} objects, got {wrong[0]!r}")
    low, high = checks.numbers("intensity_range", intensity_range)
    if not low < high:
        raise ValueError(f"intensity_range={intensity_range!r}: the first bound must be below the second")

    intensities = np.geomspace(low, high, 201)
    fig, ax = figure(
        title,
        "arithmetic intensity (FLOP/byte)",
        "throughput (FLOP/s)",
        figsize=(8.0, 6.4),
        layout="constrained",
    )
    ax.set_xscale("log")
    ax.set_yscale("log")
    for roof, style in [(r, "-") for r in device_roofs] + [(r, "--") for r in extra_roofs]:
        curve = _roofline.attainable_flops(roof.peak_flops, roof.bandwidth_bytes_per_s, intensities)
        ax.plot(intensities, curve, style, linewidth=2 if style == "--" else 1.5, label=roof.label)
    groups: dict[str, list[_roofline.Point]] = {}
    for point in points:
        groups.setdefault(point.label, []).append(point)
    markers = "osD^v<>"
    for index, (label, group) in enumerate(groups.items()):
        ax.scatter(
            [p.intensity for p in group],
            [p.flops_per_s for p in group],
            marker=markers[index % len(markers)],
            s=36,
            color="black" if index == 0 else None,
            zorder=3,
            label=label,
        )
    ax.set_xlim(low, high)
    if device_roofs or extra_roofs or points:
        ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.13), ncol=2, fontsize=9)
    return fig, ax


# --- the advisor's ranking: cost against time, one point per working option -----------------

_BOUND_MARKERS = {
    "compute": "o",
    "bandwidth": "s",
    "memory": "x",
    "cold starts": "^",
    "price": "D",
    "interconnect": "v",
    "network": "P",
}
_KIND_COLOURS = {
    "cpu": "vermillion",
    "gpu": "blue",
    "serverless": "orange",
    "api": "green",
    "hosted": "green",
}


def advice_chart(advice, title: str | None = None):
    """Cost against time for every working, priced option: colour = kind of option, marker =
    limiting bound, log axes. Serving: request latency (APIs, with no latency estimate, as a
    horizontal line at their cost). ``advice``: an ``advisor.Advice``. Returns (fig, ax)."""
    serving = advice.period == "month"
    xlabel = "request latency (s)" if serving else "wall-clock time of the job (h)"
    fig, ax = figure(
        title or advice.job, xlabel, f"cost per {advice.period} (US dollars)", figsize=(8.5, 5.0)
    )
    drawn_kinds, drawn_bounds = set(), set()
    for o in advice.options:
        cost = getattr(o, f"cost_per_{advice.period}_usd")
        if not o.works or cost is None:
            continue
        colour = PALETTE[_KIND_COLOURS[o.kind]]
        if o.kind in ("api", "hosted"):
            ax.axhline(cost, color=colour, linewidth=0.8, linestyle="--", alpha=0.6)
            ax.annotate(
                o.name,
                (0.99, cost),
                xycoords=("axes fraction", "data"),
                ha="right",
                va="bottom",
                fontsize=7,
                color=colour,
            )
            drawn_kinds.add(o.kind)
            continue
        x = o.latency_s if serving else o.hours
        ax.scatter([x], [cost], marker=_BOUND_MARKERS[o.bound], color=colour, s=45)
        ax.annotate(
            o.name.replace(" always on", ""),
            (x, cost),
            xytext=(4, 3),
            textcoords="offset points",
            fontsize=7,
        )
        drawn_kinds.add(o.kind)
        drawn_bounds.add(o.bound)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.margins(x=0.25, y=0.25)  # room for the labels at the edges
    for kind in sorted(drawn_kinds):
        ax.scatter([], [], color=PALETTE[_KIND_COLOURS[kind]], marker="o", label=kind)
    for bound in sorted(drawn_bounds):
        ax.scatter([], [], color="grey", marker=_BOUND_MARKERS[bound], label=f"bound: {bound}")
    ax.legend(loc="upper left", bbox_to_anchor=(1.04, 1.0), fontsize=8)
    fig.subplots_adjust(right=0.78)
    return fig, ax


# --- the class roofline: every machine in the room on one projected figure -------------------

CLASS_MAX_MACHINES = 30
"""The most machines :func:`class_roofline` draws (identical devices share a line of the legend)."""

_CLASS_MARKERS = "osD^vPX*"
_SHORTEN = [
    (re.compile(pattern, re.IGNORECASE), repl)
    for pattern, repl in (
        (r"\((R|TM)\)", ""),
        (r"(\bCPU\b\s*)?@\s*[\d.]+\s*GHz", ""),
        (r"\b\d+-Core Processor\b", ""),
        (r"\bwith Radeon Graphics\b", ""),
        (r"^\d+th Gen\s+", ""),
        (r"^(NVIDIA|AMD|Intel|Apple|Tesla)\s+", ""),
        (r"^(GeForce|Tesla|Radeon)\s+", ""),
        (r"\s+", " "),
    )
]


class ClassMachine(NamedTuple):
    """One learner's bench file, as the class roofline draws it."""

    learner: str  # who sent it (the file's name)
    device: str  # the name the machine reported: the GPU torch used, else the CPU model
    kind: str  # where the bench ran: "cpu", "cuda" or "mps"
    points: tuple  # roofline.Point, one per matmul measured
    roof: _roofline.Roof | None  # best copy bandwidth and best matmul FLOP/s; None if too few cases


def short_device_name(name: str, max_chars: int = 24) -> str:
    """A device name short enough for a legend, cut from the front when still too long (the end
    tells models apart): "Intel(R) Xeon(R) Platinum 8480+ CPU @ 2.00GHz" -> "Xeon Platinum 8480+",
    "11th Gen Intel(R) Core(TM) i7-1165G7 @ 2.80GHz" -> "Core i7-1165G7", "Tesla T4" -> "T4"."""
    short = str(name)
    for pattern, repl in _SHORTEN:
        short = pattern.sub(repl, short).strip()
    short = short or str(name).strip() or "?"
    return short if len(short) <= max_chars else "…" + short[len(short) - max_chars + 1 :]


def class_colours(n: int) -> list:
    """``n`` (at most CLASS_MAX_MACHINES) distinct, saturated colours: tab10, then the darker
    halves of tab20b and tab20c (no pastels: the figure is read from the back of a room)."""
    import matplotlib

    n = checks.count("n", n)
    if n > CLASS_MAX_MACHINES:
        raise ValueError(f"n={n}: the class roofline draws at most {CLASS_MAX_MACHINES} machines")
    tab10, tab20b, tab20c = (matplotlib.colormaps[name] for name in ("tab10", "tab20b", "tab20c"))
    colours = (
        [tab10(i) for i in range(10)]
        + [tab20b(i) for i in (0, 4, 8, 12, 16, 1, 5, 9, 13, 17)]
        + [tab20c(i) for i in (0, 4, 8, 12, 16, 1, 5, 9, 13, 17)]
    )
    return colours[:n]


def class_groups(machines) -> list[tuple[str, str, list[ClassMachine]]]:
    """The machines grouped by (short device name, kind), fastest measured roof first."""
    groups: dict[tuple[str, str], list[ClassMachine]] = {}
    for machine in machines:
        if not isinstance(machine, ClassMachine):
            raise TypeError(f"machines must hold plots.ClassMachine records, got {machine!r}")
        groups.setdefault((short_device_name(machine.device, 20), machine.kind), []).append(machine)

    def best(item):
        roofs = [m.roof.peak_flops for m in item[1] if m.roof is not None]
        return -max(roofs) if roofs else 0.0

    return [(name, kind, members) for (name, kind), members in sorted(groups.items(), key=best)]


def _class_label(name: str, kind: str, members: list[ClassMachine], dtypes: set[str]) -> str:
    """ "T4 · cuda ×8: 3.9–4.6 TFLOP/s" for a group, "M2 · mps (learner13): 1.3 TFLOP/s" for one."""
    from lab_utils.units import format_rate

    who = f" ×{len(members)}" if len(members) > 1 else f" ({short_device_name(members[0].learner, 12)})"
    peaks = sorted(m.roof.peak_flops for m in members if m.roof is not None)
    spread = format_rate(peaks[-1], "FLOP/s") if peaks else ""
    if len(peaks) > 1:  # "3.7–4.9 TFLOP/s": the lowest in the unit of the highest
        mantissa, unit = spread.split(" ", 1)
        spread = f"{peaks[0] * float(mantissa) / peaks[-1]:.1f}–{spread}"
    measured = {m.roof.dtype for m in members if m.roof is not None}
    dtype = f" {', '.join(sorted(measured))}" if measured and measured != dtypes else ""
    return f"{name} · {kind}{who}{dtype}" + (f": {spread}" if spread else "")


def class_roofline(
    machines,
    *,
    devices=_roofline.DEFAULT_DEVICES,
    dtype: str | None = None,
    intensity_range: tuple[float, float] = (0.1, 1e4),
    title: str = "Class roofline: the room's machines (measured) and catalog devices",
):
    """The class roofline for a projector (16:9, 1280 x 720 pixels): identical devices merged
    into one legend line ("T4 · cuda ×8", with the spread of their best FLOP/s), each group in
    its own colour and marker (dashed: the group's median measured roof; band: its spread),
    the device kind shown (cpu, cuda, mps), one legend column outside the axes, and the catalog
    ``devices`` as grey roofs at ``dtype`` (None: the dtype most learners measured), labelled
    inside the axes. ``machines``: up to CLASS_MAX_MACHINES :class:`ClassMachine`. Returns the figure.
    """
    import matplotlib.pyplot as plt
    import numpy as np
    from matplotlib.lines import Line2D

    machines = list(machines)
    if not machines:
        raise ValueError("machines is empty: give at least one ClassMachine")
    if len(machines) > CLASS_MAX_MACHINES:
        raise ValueError(
            f"machines holds {len(machines)}: the class roofline draws at most {CLASS_MAX_MACHINES}"
        )
    groups = class_groups(machines)
    measured_dtypes = [m.roof.dtype for m in machines if m.roof is not None]
    if dtype is None:
        dtype = max(set(measured_dtypes), key=measured_dtypes.count) if measured_dtypes else "fp32"
    colours = class_colours(len(groups))
    low, high = checks.numbers("intensity_range", intensity_range)
    intensities = np.geomspace(low, high, 201)

    def attainable(roof):
        return _roofline.attainable_flops(roof.peak_flops, roof.bandwidth_bytes_per_s, intensities)

    legend_size = 13 if len(groups) <= 15 else 11 if len(groups) <= 22 else 9.5
    with plt.rc_context(
        {"font.size": 14, "axes.titlesize": 18, "axes.labelsize": 15, "legend.fontsize": legend_size}
    ):
        fig, ax = figure(
            title,
            "arithmetic intensity (FLOP/byte)",
            "throughput (FLOP/s)",
            figsize=(16, 9),
            dpi=80,
            layout="constrained",
        )
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.title.set_fontsize(18)
        labels: list[tuple[float, list[str]]] = []  # catalog roofs within 1.6x share one label
        for device in devices:
            spec = hardware.as_spec(device)
            roof = _roofline.roof_of(spec, dtype if dtype in spec.peak_flops else None)
            ax.plot(intensities, attainable(roof), color="0.6", linewidth=1.2, zorder=1)
            name = f"{spec.name} {roof.dtype}"
            near = next((entry for entry in labels if 1 / 1.6 < entry[0] / roof.peak_flops < 1.6), None)
            if near is None:
                labels.append((roof.peak_flops, [name]))
            else:
                near[1].append(name)
        for peak, names in labels:
            ax.text(
                high / 1.5,
                peak * 1.08,
                f"{', '.join(names)} (vendor)",
                color="0.3",
                fontsize=11,
                ha="right",
                va="bottom",
                zorder=4,
            )
        handles = []
        for index, ((name, kind, members), colour) in enumerate(zip(groups, colours)):
            marker = _CLASS_MARKERS[index % len(_CLASS_MARKERS)]
            roofs = sorted((m.roof for m in members if m.roof is not None), key=lambda roof: roof.peak_flops)
            if roofs:
                ax.plot(
                    intensities,
                    attainable(roofs[len(roofs) // 2]),
                    "--",
                    color=colour,
                    linewidth=1.8,
                    zorder=2,
                )
            if len(roofs) > 1:
                curves = np.array([attainable(roof) for roof in roofs])
                ax.fill_between(
                    intensities,
                    curves.min(axis=0),
                    curves.max(axis=0),
                    color=colour,
                    alpha=0.18,
                    linewidth=0,
                    zorder=2,
                )
            points = [p for m in members for p in m.points]
            ax.scatter(
                [p.intensity for p in points],
                [p.flops_per_s for p in points],
                marker=marker,
                s=60,
                color=colour,
                edgecolors="black",
                linewidths=0.4,
                zorder=3,
            )
            handles.append(
                Line2D(
                    [],
                    [],
                    color=colour,
                    linestyle="--" if roofs else "none",
                    marker=marker,
                    markersize=9,
                    markeredgecolor="black",
                    markeredgewidth=0.4,
                    label=_class_label(name, kind, members, {dtype}),
                )
            )
        ax.set_xlim(low, high)
        fig.legend(
            handles=handles,
            loc="outside right upper",
            ncol=1,
            title=f"{len(machines)} machines, {dtype} matmul, measured\n(dashed: median roof; band: spread)",
        )
    return fig
