"""units (formatting at the edge), plots (one style), cli (doctor)."""

import matplotlib
import pytest

from lab_utils import cli, plots, units


@pytest.mark.parametrize(
    "call, expected",
    [
        (lambda: units.format_bytes(80e9), "80.0 GB"),
        (lambda: units.format_bytes(2**30), "1.1 GB"),
        (lambda: units.format_bytes(2**30, binary=True), "1.0 GiB"),
        (lambda: units.bytes_in(14.5e9), 14.5),
        (lambda: units.bytes_label("memory", "MB"), "memory (MB = 10^6 bytes)"),
        (lambda: units.format_bytes(512), "512.0 B"),
        (lambda: units.format_bytes(0), "0.0 B"),
        (lambda: units.format_rate(9.89e14, "FLOP/s"), "989.0 TFLOP/s"),
        (lambda: units.format_rate(3.35e12, "B/s", digits=2), "3.35 TB/s"),
        (lambda: units.format_seconds(0.0015), "1.5 ms"),
        (lambda: units.format_seconds(2.5e-6), "2.5 µs"),
        (lambda: units.format_seconds(1.25), "1.25 s"),
        (lambda: units.format_seconds(90), "1.5 min"),
        (lambda: units.format_seconds(7200), "2.0 h"),
    ],
)
def test_formatting(call, expected):
    assert call() == expected


def test_figure_has_title_and_labelled_axes_in_the_course_style():
    fig, ax = plots.figure("Matmul time", "matrix size n (elements)", "time per call (s)")
    try:
        assert ax.get_title() == "Matmul time"
        assert ax.get_xlabel() == "matrix size n (elements)"
        (line,) = ax.plot([1, 2], [3, 4])
        assert matplotlib.colors.to_hex(line.get_color()).upper() == plots.PALETTE["blue"].upper()
    finally:
        matplotlib.pyplot.close(fig)


@pytest.mark.parametrize(
    "title, xlabel, ylabel, parameter",
    [
        ("", "n (elements)", "time (s)", "title"),
        ("t", "matrix size", "time (s)", "xlabel"),
        ("t", "n (elements)", "time", "ylabel"),
    ],
)
def test_figure_refuses_missing_titles_and_units(title, xlabel, ylabel, parameter):
    with pytest.raises(ValueError, match=parameter):
        plots.figure(title, xlabel, ylabel)


def test_palette_is_okabe_ito():
    assert set(plots.CYCLE) == set(plots.PALETTE)
    assert plots.PALETTE["vermillion"] == "#D55E00" and plots.PALETTE["sky"] == "#56B4E9"


def test_doctor_prints_the_machine_report(capsys):
    status = cli.main(["doctor"])
    output = capsys.readouterr().out
    assert "PyTorch" in output and "RAM" in output and "Runtime" in output
    assert status == (1 if "cannot run" in output else 0)


@pytest.mark.parametrize("argv", [[], ["no-such-command"], ["doctor", "--bogus"]])
def test_bad_usage_exits_with_status_2(argv, capsys):
    with pytest.raises(SystemExit) as exit_info:
        cli.main(argv)
    assert exit_info.value.code == 2
    error = capsys.readouterr().err
    assert error.startswith("lab-utils") and "error:" in error and len(error.strip().splitlines()) == 1
