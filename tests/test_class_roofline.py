"""The class roofline: lab-utils compare reads what learners send (UTF-8, UTF-16, broken files),
skips a bad file with one line and draws the rest; lab-utils bench --output; the figure itself."""

import json

import matplotlib
import pytest

from lab_utils import bench, cli, hardware, plots, roofline

matplotlib.use("Agg")


def bench_result(device_name="Tesla T4", scale=1.0, dtype="fp32"):
    """A small `bench --json` result: one copy and two products (figures made up for the test)."""
    rows = [{"kind": "copy", "size": 2**20, "dtype": "fp32", "flops_per_call": 0, "bytes_per_call": 2**23,
             "flops_per_s": 0.0, "bytes_per_s": 1e10 * scale}]
    for n in (256, 512):
        rows.append({"kind": "matmul", "size": n, "dtype": dtype, "flops_per_call": 2 * n**3,
                     "bytes_per_call": 12 * n * n, "flops_per_s": 1e11 * scale * n / 512, "bytes_per_s": 1e9})
    return {"format": cli.JSON_FORMAT, "version": cli.JSON_VERSION, "machine": {"device_name": device_name},
            "device": "cpu", "rows": rows, "skipped": []}


def test_compare_reads_utf8_and_utf16_skips_bad_files_and_draws_the_rest(tmp_path, capsys):
    (tmp_path / "alice.json").write_text(json.dumps(bench_result()), encoding="utf-8")
    # PowerShell 5's `>` writes UTF-16 with a byte-order mark
    (tmp_path / "bob.json").write_bytes(json.dumps(bench_result("NVIDIA GeForce RTX 4090", 2.0)).encode("utf-16"))
    (tmp_path / "carol.json").write_bytes(b"\xef\xbb\xbf" + json.dumps(bench_result("Apple M2", 0.5)).encode())
    (tmp_path / "empty.json").write_text("")
    (tmp_path / "notes.json").write_text("my results: fast!")
    png = tmp_path / "class.png"
    status = cli.main(["compare", str(tmp_path / "*.json"), "--output", str(png)])  # a pattern, as PowerShell passes it
    out = capsys.readouterr().out
    assert status == 0 and png.read_bytes()[:4] == b"\x89PNG"
    assert "alice: T4 (fp32)" in out and "bob: RTX 4090 (fp32)" in out and "carol: M2 (fp32)" in out
    skipped = [line for line in out.splitlines() if line.startswith("skipped")]
    assert len(skipped) == 2
    assert any("empty.json is empty" in line for line in skipped)
    assert any("notes.json is not JSON" in line for line in skipped)
    assert "3 machine(s), 2 file(s) skipped" in out


def test_compare_refuses_more_machines_than_the_figure_keeps_apart(tmp_path):
    for index in range(plots.CLASS_MAX_MACHINES + 1):
        (tmp_path / f"m{index:02d}.json").write_text(json.dumps(bench_result()))
    with pytest.raises(cli.UsageError, match="at most 30"):
        cli._compare(cli.build_parser().parse_args(["compare", *map(str, sorted(tmp_path.glob("*.json")))]))


@pytest.mark.parametrize("name, short", [
    ("Intel(R) Xeon(R) Platinum 8480+ CPU @ 2.00GHz", "Xeon Platinum 8480+"),
    ("NVIDIA GeForce RTX 4090", "RTX 4090"),
    ("Tesla T4", "T4"),
    ("AMD Ryzen 7 5800X 8-Core Processor", "Ryzen 7 5800X"),
    ("NVIDIA H100 80GB HBM3", "H100 80GB HBM3"),
    ("", "?"),
])
def test_short_device_names(name, short):
    assert plots.short_device_name(name) == short


def test_a_long_name_is_cut_to_fit_the_legend():
    assert len(plots.short_device_name("x" * 80)) == 24


def test_thirty_machines_keep_a_colour_each_for_line_and_points_and_the_legend_sits_outside():
    points = [roofline.Point("p", 10.0, 1e11), roofline.Point("p", 100.0, 5e11)]
    machines = [(f"learner{i}", points, roofline.Roof(f"m{i}", 1e12 * (i + 1), 1e11, "fp32")) for i in range(30)]
    fig = plots.class_roofline(machines, devices=("T4",))
    ax = fig.axes[0]
    dashed = [line for line in ax.get_lines() if line.get_linestyle() == "--"]
    scatter_colours = [tuple(collection.get_facecolor()[0]) for collection in ax.collections]
    assert [matplotlib.colors.to_rgba(line.get_color()) for line in dashed] == scatter_colours
    assert len(set(scatter_colours)) == 30  # no colour repeats
    legend = fig.legends[0]
    assert len(legend.get_texts()) == 30
    fig.canvas.draw()
    assert legend.get_window_extent().x0 >= ax.get_window_extent().x1  # outside the axes, to the right
    assert tuple(fig.get_size_inches() * fig.dpi) == (1280, 720)  # 16:9, a projector's native size


def test_class_colours_refuse_a_31st_machine():
    with pytest.raises(ValueError, match="n=31"):
        plots.class_colours(31)


def test_bench_output_writes_utf8_json_and_compares_like_with_like(tmp_path, monkeypatch, capsys):
    rows = [bench.BenchRow("copy", 2**20, "fp32", "cpu", 1e-3, 0.0, 8e9, 0, 2**23, 1e-5),
            bench.BenchRow("matmul", 512, "fp32", "cpu", 1e-3, 2e11, 3e9, 2 * 512**3, 12 * 512**2, 1e-5)]
    skipped = (bench.Skipped("matmul", 4096, "fp32", "not run: it would take about 2 s"),)
    monkeypatch.setattr(bench, "sweep", lambda **kwargs: bench.BenchTable(tuple(rows), skipped, "cpu", 3.0, 2.9))
    out_file = tmp_path / "results" / "me.json"
    assert cli.main(["bench", "--device", "cpu", "--output", str(out_file)]) == 0
    data = json.loads(out_file.read_bytes().decode("utf-8"))
    assert data["format"] == cli.JSON_FORMAT and [s["size"] for s in data["skipped"]] == [4096]
    out = capsys.readouterr().out
    assert "skipped matmul n=4096 fp32: not run" in out and f"wrote {out_file}" in out
    # the learner measured fp32: the T4 is shown at its fp32 peak (8.1 TFLOP/s), not its fp16 one
    t4_line = next(line for line in out.splitlines() if line.startswith("T4 "))
    t4 = hardware.get("T4")
    assert "fp32" in t4_line and "fp16" not in t4_line
    assert f"{t4.peak_flops['fp32'] / 2e11:.1f}x" in t4_line
