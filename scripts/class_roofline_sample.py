"""Draw the instructor guide's class-roofline example: a room of 25 SAMPLE machines.

Usage: python scripts/class_roofline_sample.py [OUTPUT_PNG] [--files FOLDER]
(default book/_static/class_roofline_sample.png; --files also keeps the sample files there)

The sample files are SYNTHETIC, not measurements: each is a `lab-utils bench --output` file made
from a device's figures (vendor specification for catalog devices, an assumed peak and bandwidth
for laptops, Macs and the Colab CPU, listed in ROOM) at an assumed efficiency that differs a
little between learners, as it does in a room. The room is the one a workshop meets: 8 Colab T4s,
4 Colab CPU runtimes, 4 Macs (run on the Apple GPU, "mps", or on the CPU), 6 laptops, an RTX 4090,
an A100 pod and a desktop, every learner measuring fp32 (the bench default), plus two broken files
(empty, not JSON) that `lab-utils compare` skips with one line each. The files go through the
same reading and drawing as `lab-utils compare`, and the figure's title says they are samples.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from lab_utils import cli, hardware, plots  # noqa: E402

SAMPLE_COPY_EFFICIENCY = 0.75  # assumption: a copy reaches 75% of the bandwidth
SIZES = (256, 512, 1024, 2048)
COLAB_T4_EFFICIENCIES = (0.52, 0.55, 0.58, 0.60, 0.61, 0.63, 0.64, 0.68)  # assumed spread of 8 shared T4s
# Assumed fp32 peaks and bandwidths (FLOP/s, bytes/s) of devices the catalog does not hold:
# cores x clock x FLOP per cycle, and the memory's nominal bandwidth. Sample figures, not sources.
ASSUMED = {
    "Intel(R) Xeon(R) CPU @ 2.20GHz": (2 * 2.2e9 * 32, 15e9),  # a Colab CPU runtime: 2 vCPUs, AVX2
    "Apple M2": (3.6e12, 100e9),  # the M2's 10-core GPU; its CPU runs are scaled by CPU_SHARE
    "Apple M3 Pro": (7.4e12, 150e9),
    "11th Gen Intel(R) Core(TM) i7-1165G7 @ 2.80GHz": (4 * 2.8e9 * 32, 51e9),
    "AMD Ryzen 7 5800U with Radeon Graphics": (8 * 1.9e9 * 32, 51e9),
    "Intel(R) Core(TM) i5-8250U CPU @ 1.60GHz": (4 * 1.6e9 * 32, 38e9),
    "13th Gen Intel(R) Core(TM) i7-1355U": (10 * 1.7e9 * 32, 83e9),
    "AMD Ryzen 5 7530U with Radeon Graphics": (6 * 2.0e9 * 32, 51e9),
    "AMD Ryzen 9 7950X 16-Core Processor": (16 * 4.5e9 * 32, 83e9),
}
CPU_SHARE = 0.3  # assumption: a Mac's CPU run (Accelerate) reaches about 30% of its GPU's fp32
# (name torch or the CPU reports, the bench's device, catalog device or None, assumed efficiency)
ROOM = (
    *(("Tesla T4", "cuda", "T4", e) for e in COLAB_T4_EFFICIENCIES),
    *(("Intel(R) Xeon(R) CPU @ 2.20GHz", "cpu", None, e) for e in (0.45, 0.5, 0.55, 0.6)),
    ("Apple M2", "mps", None, 0.6),
    ("Apple M2", "cpu", None, 0.6),
    ("Apple M1 Pro", "mps", "Apple M1 Pro", 0.55),
    ("Apple M3 Pro", "cpu", None, 0.6),
    ("11th Gen Intel(R) Core(TM) i7-1165G7 @ 2.80GHz", "cpu", None, 0.55),
    ("11th Gen Intel(R) Core(TM) i7-1165G7 @ 2.80GHz", "cpu", None, 0.4),
    ("AMD Ryzen 7 5800U with Radeon Graphics", "cpu", None, 0.5),
    ("Intel(R) Core(TM) i5-8250U CPU @ 1.60GHz", "cpu", None, 0.45),
    ("13th Gen Intel(R) Core(TM) i7-1355U", "cpu", None, 0.35),
    ("AMD Ryzen 5 7530U with Radeon Graphics", "cpu", None, 0.5),
    ("NVIDIA GeForce RTX 4090", "cuda", "RTX 4090", 0.7),
    ("NVIDIA A100-SXM4-80GB", "cuda", "A100 80GB SXM", 0.9),
    ("AMD Ryzen 9 7950X 16-Core Processor", "cpu", None, 0.6),
)
BROKEN = {"learner26.json": "", "learner27.json": "my results: fast!"}  # skipped by compare


def sample_file(reported_name: str, device: str, catalog: str | None, efficiency: float) -> dict:
    """One synthetic `lab-utils bench --output` result (see the module's docstring): fp32 only."""
    if catalog is not None:
        spec = hardware.get(catalog)
        peak_flops, bandwidth = spec.peak_flops["fp32"], spec.bandwidth_bytes_per_s
    else:
        peak_flops, bandwidth = ASSUMED[reported_name]
        peak_flops *= CPU_SHARE if reported_name.startswith("Apple") and device == "cpu" else 1
    rows = [
        {
            "kind": "copy",
            "size": 2**24,
            "dtype": "fp32",
            "flops_per_call": 0.0,
            "bytes_per_call": 2**27,
            "flops_per_s": 0.0,
            "bytes_per_s": SAMPLE_COPY_EFFICIENCY * bandwidth,
        }
    ]
    small_n = 1024 if device != "cpu" else 256  # below it, fixed costs weigh (assumption)
    for n in SIZES:
        flops_per_s = efficiency * peak_flops * n**3 / (n**3 + small_n**3)
        rows.append(
            {
                "kind": "matmul",
                "size": n,
                "dtype": "fp32",
                "flops_per_call": 2.0 * n**3,
                "bytes_per_call": 12.0 * n * n,
                "flops_per_s": flops_per_s,
                "bytes_per_s": flops_per_s * 6 / n,
            }
        )
    return {
        "format": cli.JSON_FORMAT,
        "version": cli.JSON_VERSION,
        "machine": {"device_name": reported_name},
        "device": device,
        "rows": rows,
        "skipped": [],
        "synthetic": True,
    }


def write_room(folder: Path) -> list[Path]:
    """The room's 25 sample files and its 2 broken ones in ``folder``; their paths, sorted."""
    folder.mkdir(parents=True, exist_ok=True)
    for index, machine in enumerate(ROOM, start=1):
        text = json.dumps(sample_file(*machine), indent=1)
        (folder / f"learner{index:02d}.json").write_text(text, encoding="utf-8")
    for name, text in BROKEN.items():
        (folder / name).write_text(text, encoding="utf-8")
    return sorted(folder.glob("*.json"))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "output", nargs="?", type=Path, default=ROOT / "book" / "_static" / "class_roofline_sample.png"
    )
    parser.add_argument("--files", type=Path, help="keep the sample files in this folder")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as scratch:
        machines = []
        for path in write_room(args.files or Path(scratch)):
            try:
                machines.append(cli.class_entry(str(path), cli.load_result(str(path))))
            except ValueError as why:
                print(f"skipped {path.name} {why}")
    fig = plots.class_roofline(
        machines,
        title=f"Class roofline of {len(machines)} SAMPLE machines (synthetic files, not measurements)",
    )
    args.output.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(args.output)
    print(f"wrote {args.output} ({args.output.stat().st_size / 1024:.0f} KiB, {len(machines)} machines)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
