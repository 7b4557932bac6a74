"""What every calculator of ``lab_utils.widgets`` shares: the live panel that redraws a figure as its
controls move, the grids of batches and sequence lengths, and a config.json pasted into a
calculator read as the command line reads a file."""

from __future__ import annotations

from lab_utils import (
    hf_config,
    llms,
)

_BATCHES = (1, 2, 4, 8, 16, 32, 64, 128, 256)
_SEQ_LENS = (512, 1024, 2048, 4096, 8192, 16384, 32768, 65536, 131072)
_PART_COLOURS = ("blue", "orange", "purple", "vermillion", "sky", "yellow")  # green means "fits"


def _live_panel(draw, controls: dict, rows):
    """An ipywidgets panel: ``controls`` laid out in ``rows`` (lists of their names) above an
    output that shows ``draw(**values)`` again whenever a control changes.

    A ValueError from ``draw`` is printed in place of the figure. The panel keeps the controls
    as ``panel.controls``, for tests and for learners who want to set values from code.
    """
    import ipywidgets as w
    import matplotlib.pyplot as plt
    from IPython.display import display

    output = w.Output()

    def redraw(_change=None):
        with output:
            output.clear_output(wait=True)
            try:
                fig = draw(**{name: control.value for name, control in controls.items()})
            except ValueError as error:  # e.g. a model without the shape a part needs
                print(error)
                return
            display(fig)
            plt.close(fig)

    for control in controls.values():
        control.observe(redraw, names="value")
    redraw()
    panel = w.VBox([*(w.HBox([controls[name] for name in row]) for row in rows), output])
    panel.controls = controls
    return panel


PASTED_CONFIG = "pasted config.json"
"""How the calculators name a config.json pasted into them, in its model's name and its errors."""


def pasted_model(model, config_json: str = ""):
    """The model a calculator draws: the model of ``config_json``, a config.json's text pasted into
    the calculator, when it holds any, else ``model``. The text is read by ``llms.from_hf_config``
    as ``lab-utils --model`` reads a file, so a bad one is the command line's one-line ValueError
    (not JSON, a missing field, an unsupported ``model_type``)."""
    if not isinstance(config_json, str):
        raise TypeError(f"config_json must be a config.json's text, got {type(config_json).__name__}")
    if not config_json.strip():
        return model
    data = hf_config.parse(config_json, PASTED_CONFIG)
    return llms.from_hf_config(data, source=PASTED_CONFIG)


def _config_box(config_json: str):
    """The Textarea a learner pastes a config.json into; it redraws when it loses the focus."""
    import ipywidgets as w

    return w.Textarea(
        value=config_json,
        placeholder="paste a model's config.json here: it replaces the model above (empty: that model)",
        description="config.json",
        continuous_update=False,
        layout=w.Layout(width="95%", height="7em"),
    )
