"""One look for every figure in the course: a colour-blind-safe palette and labelled axes.

Every figure has a title and both axes name their unit, e.g. "matrix size n (elements)".
Alt text is set where the figure is shown (the notebook cell's ``mystnb.image.alt`` metadata).
"""

from __future__ import annotations

import re

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
