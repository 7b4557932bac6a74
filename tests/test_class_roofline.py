"""The class roofline: lab-utils compare reads what learners send (UTF-8, UTF-16, broken files),
skips a bad file with one line and draws the rest; lab-utils bench --output; the figure itself."""

import json

import matplotlib
import pytest

from lab_utils import bench, cli, hardware, plots, roofline

matplotlib.use("Agg")


def bench_result(device_name="Tesla T4", scale=1.0, dtype="fp32"):
    """A small `bench --json` result: one copy and two products (figures made up for the test)."""
    rows = [
        {
            "kind": "copy",
            "size": 2**20,
            "dtype": "fp32",
            "flops_per_call": 0,
            "bytes_per_call": 2**23,
            "flops_per_s": 0.0,
            "bytes_per_s": 1e10 * scale,
        }
    ]
    for n in (256, 512):
        rows.append(
            {
                "kind": "matmul",
                "size": n,
                "dtype": dtype,
                "flops_per_call": 2 * n**3,
                "bytes_per_call": 12 * n * n,
                "flops_per_s": 1e11 * scale * n / 512,
                "bytes_per_s": 1e9,
            }
        )
    return {
        "format": cli.JSON_FORMAT,
        "version": cli.JSON_VERSION,
        "machine": {"device_name": device_name},
        "device": "cpu",
        "rows": rows,
        "skipped": [],
    }


def test_compare_reads_utf8_and_utf16_skips_bad_files_and_draws_the_rest(tmp_path, capsys):
    (tmp_path / "alice.json").write_text(json.dumps(bench_result()), encoding="utf-8")
    # PowerShell 5's `>` writes UTF-16 with a byte-order mark
    (tmp_path / "bob.json").write_bytes(
        json.dumps(bench_result("NVIDIA GeForce RTX 4090", 2.0)).encode("utf-16")
    )
    (tmp_path / "carol.json").write_bytes(
        b"\xef\xbb\xbf" + json.dumps(bench_result("Apple M2", 0.5)).encode()
    )
    (tmp_path / "empty.json").write_text("")
    (tmp_path / "notes.json").write_text("my results: fast!")
    png = tmp_path / "class.png"
    status = cli.main(
        ["compare", str(tmp_path / "*.json"), "--output", str(png)]
    )  # a pattern, as PowerShell passes it
    out = capsys.readouterr().out
    assert status == 0 and png.read_bytes()[:4] == b"\x89PNG"
    assert (
        "alice: T4 (cpu, fp32)" in out
        and "bob: RTX 4090 (cpu, fp32)" in out
        and "carol: M2 (cpu, fp32)" in out
    )
    skipped = [line for line in out.splitlines() if line.startswith("skipped")]
    assert len(skipped) == 2
    assert any("empty.json is empty" in line for line in skipped)
    assert any("notes.json is not JSON" in line for line in skipped)
    assert "3 machine(s), 2 file(s) skipped" in out


def test_compare_refuses_more_machines_than_the_figure_keeps_apart(tmp_path):
    for index in range(plots.CLASS_MAX_MACHINES + 1):
        (tmp_path / f"m{index:02d}.json").write_text(json.dumps(bench_result()))
    args = cli.build_parser().parse_args(["compare", *map(str, sorted(tmp_path.glob("*.json")))])
    with pytest.raises(cli.UsageError, match="at most 30"):
        args.run(args)  # the handler compare's register set


@pytest.mark.parametrize(
    "name, short",
    [
        ("Intel(R) Xeon(R) Platinum 8480+ CPU @ 2.00GHz", "Xeon Platinum 8480+"),
        ("NVIDIA GeForce RTX 4090", "RTX 4090"),
        ("Tesla T4", "T4"),
        ("AMD Ryzen 7 5800X 8-Core Processor", "Ryzen 7 5800X"),
        ("NVIDIA H100 80GB HBM3", "H100 80GB HBM3"),
        ("11th Gen Intel(R) Core(TM) i7-1165G7 @ 2.80GHz", "Core i7-1165G7"),
        ("AMD Ryzen 7 5800U with Radeon Graphics", "Ryzen 7 5800U"),
        ("", "?"),
    ],
)
def test_short_device_names(name, short):
    assert plots.short_device_name(name) == short


def test_a_long_name_is_cut_from_the_front_where_models_differ():
    short = plots.short_device_name("Some Vendor Accelerator Engineering Sample Model 7700-XT")
    assert len(short) == 24 and short.startswith("…") and short.endswith("Model 7700-XT")


def machine(learner, device, kind="cuda", peak_flops=4e12, bandwidth=2.4e11, dtype="fp32"):
    points = (roofline.Point("p", 40.0, peak_flops / 4), roofline.Point("p", 300.0, peak_flops))
    return plots.ClassMachine(
        learner, device, kind, points, roofline.Roof(device, peak_flops, bandwidth, dtype)
    )


def texts_overlap(fig):
    """Visible texts (title, axis labels, catalog labels, the legend) outside the figure.

    Returns those outside and the pairs that overlap.
    """
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    ax, legend = fig.axes[0], fig.legends[0]
    boxes = [
        (text.get_text(), text.get_window_extent(renderer))
        for text in (ax.title, ax.xaxis.label, ax.yaxis.label, *ax.texts)
        if text.get_text()
    ]
    boxes.append(("legend", legend.get_window_extent(renderer)))
    page = fig.bbox
    outside = [
        name
        for name, box in boxes
        if box.x0 < page.x0 - 1 or box.x1 > page.x1 + 1 or box.y0 < page.y0 - 1 or box.y1 > page.y1 + 1
    ]
    pairs = [
        (a, b) for i, (a, box_a) in enumerate(boxes) for b, box_b in boxes[i + 1 :] if box_a.overlaps(box_b)
    ]
    return outside, pairs


def test_thirty_different_machines_fit_one_legend_column_without_overlapping_text():
    machines = [
        machine(
            f"learner{i:02d}",
            f"Accelerator model {i:02d}",
            ("cpu", "cuda", "mps")[i % 3],
            peak_flops=1e11 * 1.2**i,
        )
        for i in range(30)
    ]
    fig = plots.class_roofline(
        machines, title="Class roofline of 30 SAMPLE machines (synthetic files, not measurements)"
    )
    ax, legend = fig.axes[0], fig.legends[0]
    assert legend._ncols == 1 and len(legend.get_texts()) == 30
    assert texts_overlap(fig) == ([], [])
    assert legend.get_window_extent().x0 >= ax.get_window_extent().x1  # beside the axes, not on them
    assert ax.get_window_extent().width >= 0.5 * fig.bbox.width  # the plot keeps most of the width
    assert tuple(fig.get_size_inches() * fig.dpi) == (1280, 720)  # 16:9, a projector's native size
    dashed = [line for line in ax.get_lines() if line.get_linestyle() == "--"]
    assert len({matplotlib.colors.to_rgba(line.get_color()) for line in dashed}) == 30  # a colour each


def test_identical_devices_share_a_legend_line_with_their_spread_and_kinds_stay_apart():
    room = [machine(f"t4-{i}", "Tesla T4", "cuda", peak_flops=(3.7 + 0.1 * i) * 1e12) for i in range(8)]
    room += [machine("ann", "Apple M2", "mps", 1.9e12), machine("ben", "Apple M2", "cpu", 6.5e11)]
    fig = plots.class_roofline(room, devices=("T4", "A100 80GB SXM"))
    labels = [text.get_text() for text in fig.legends[0].get_texts()]
    assert labels == [
        "T4 · cuda ×8: 3.7–4.4 TFLOP/s",
        "M2 · mps (ann): 1.9 TFLOP/s",
        "M2 · cpu (ben): 650.0 GFLOP/s",
    ]
    assert "10 machines, fp32" in fig.legends[0].get_title().get_text()
    # the catalog roofs are drawn at the dtype the learners measured, not at 16-bit peaks
    catalog = " ".join(text.get_text() for text in fig.axes[0].texts)
    assert "T4 fp32" in catalog and "A100 80GB SXM fp32" in catalog and "fp16" not in catalog
    tops = {round(max(line.get_ydata())) for line in fig.axes[0].get_lines() if line.get_linestyle() == "-"}
    assert tops == {round(hardware.get(name).peak_flops["fp32"]) for name in ("T4", "A100 80GB SXM")}
    assert texts_overlap(fig) == ([], [])


def test_the_class_roofline_takes_class_machines_only():
    with pytest.raises(TypeError, match="ClassMachine"):
        plots.class_roofline([("alice", [], None)])


def test_class_colours_refuse_a_31st_machine():
    with pytest.raises(ValueError, match="n=31"):
        plots.class_colours(31)


def test_bench_output_writes_utf8_json_and_compares_like_with_like(tmp_path, monkeypatch, capsys):
    rows = [
        bench.BenchRow("copy", 2**20, "fp32", "cpu", 1e-3, 0.0, 8e9, 0, 2**23, 1e-5),
        bench.BenchRow("matmul", 512, "fp32", "cpu", 1e-3, 2e11, 3e9, 2 * 512**3, 12 * 512**2, 1e-5),
    ]
    skipped = (bench.Skipped("matmul", 4096, "fp32", "not run: it would take about 2 s"),)
    monkeypatch.setattr(
        bench, "sweep", lambda **kwargs: bench.BenchTable(tuple(rows), skipped, "cpu", 3.0, 2.9)
    )
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
