"""Draw the instructor guide's class-roofline example: 20 sample machines, as a room might send.

Usage: python scripts/class_roofline_sample.py [OUTPUT_PNG] [--files FOLDER]
(default book/_static/class_roofline_sample.png; --files also keeps the 20 sample files there)

The sample files are SYNTHETIC, not measurements: each is a `lab-utils bench --json` file made
from a catalog device's vendor figures at assumed efficiencies (SAMPLE_MATMUL_EFFICIENCY of the
FP32 or BF16 peak for large products, less for small ones; SAMPLE_COPY_EFFICIENCY of the memory
bandwidth). They go through the same reading and drawing as `lab-utils compare`, and the
figure's title says they are samples. Three learners share a Colab T4, as in a real room.
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

SAMPLE_MATMUL_EFFICIENCY = 0.7  # assumption: large products reach 70% of the vendor peak
SAMPLE_COPY_EFFICIENCY = 0.75  # assumption: a copy reaches 75% of the vendor bandwidth
SIZES = (256, 512, 1024, 2048, 4096)
# (catalog device, the name torch or the CPU reports, the dtypes the learner measured)
ROOM = (
    ("T4", "Tesla T4", ("fp32", "fp16")), ("T4", "Tesla T4", ("fp32",)), ("T4", "Tesla T4", ("fp32",)),
    ("L4", "NVIDIA L4", ("fp32", "bf16")), ("A10", "NVIDIA A10", ("fp32",)),
    ("A100 40GB SXM", "NVIDIA A100-SXM4-40GB", ("bf16",)), ("A100 80GB SXM", "NVIDIA A100-SXM4-80GB", ("fp32",)),
    ("H100 SXM", "NVIDIA H100 80GB HBM3", ("bf16",)), ("H100 PCIe", "NVIDIA H100 PCIe", ("fp32",)),
    ("H200 SXM", "NVIDIA H200", ("bf16",)), ("RTX 3090", "NVIDIA GeForce RTX 3090", ("fp32",)),
    ("RTX 4090", "NVIDIA GeForce RTX 4090", ("fp32", "bf16")), ("RTX A6000", "NVIDIA RTX A6000", ("fp32",)),
    ("L40S", "NVIDIA L40S", ("bf16",)), ("B200", "NVIDIA B200", ("bf16",)),
    ("RTX 5090", "NVIDIA GeForce RTX 5090", ("fp32",)), ("MI300X", "AMD Instinct MI300X", ("bf16",)),
    ("AMD EPYC 9684X", "AMD EPYC 9684X 96-Core Processor", ("fp32",)),
    ("Intel Xeon Platinum 8480+", "Intel(R) Xeon(R) Platinum 8480+", ("fp32",)),
    ("Intel Xeon Platinum 8480+", "Intel(R) Xeon(R) Platinum 8480+", ("fp32",)),
)


def sample_file(device: str, reported_name: str, dtypes) -> dict:
    """One synthetic `lab-utils bench --json` result for ``device`` (see the module's docstring)."""
    spec = hardware.get(device)
    copy_bytes_per_s = SAMPLE_COPY_EFFICIENCY * spec.bandwidth_bytes_per_s
    rows = [{"kind": "copy", "size": 2**24, "dtype": "fp32", "flops_per_call": 0.0, "bytes_per_call": 2**27,
             "flops_per_s": 0.0, "bytes_per_s": copy_bytes_per_s}]
    for dtype in dtypes:
        element_bytes = 4 if dtype == "fp32" else 2
        for n in SIZES:
            small_n = 1024 if spec.kind == "gpu" else 256  # below it, fixed costs weigh (assumption)
            flops_per_s = SAMPLE_MATMUL_EFFICIENCY * spec.peak_flops[dtype] * n**3 / (n**3 + small_n**3)
            rows.append({"kind": "matmul", "size": n, "dtype": dtype, "flops_per_call": 2.0 * n**3,
                         "bytes_per_call": 3.0 * n * n * element_bytes, "flops_per_s": flops_per_s,
                         "bytes_per_s": flops_per_s * 3 * element_bytes / (2 * n)})
    return {"format": cli.JSON_FORMAT, "version": cli.JSON_VERSION, "machine": {"device_name": reported_name},
            "device": "cuda" if spec.kind == "gpu" else "cpu", "rows": rows, "skipped": [], "synthetic": True}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("output", nargs="?", type=Path, default=ROOT / "book" / "_static" / "class_roofline_sample.png")
    parser.add_argument("--files", type=Path, help="keep the sample files in this folder")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as scratch:
        folder = args.files or Path(scratch)
        folder.mkdir(parents=True, exist_ok=True)
        machines = []
        for index, (device, reported, dtypes) in enumerate(ROOM, start=1):
            path = folder / f"learner{index:02d}.json"
            path.write_text(json.dumps(sample_file(device, reported, dtypes), indent=1), encoding="utf-8")
            machines.append(cli.class_entry(str(path), cli.load_result(str(path))))
    fig = plots.class_roofline(machines, title=f"Class roofline of {len(machines)} SAMPLE machines: synthetic files "
                                               "made from vendor specifications, not measurements")
    args.output.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(args.output)
    print(f"wrote {args.output} ({args.output.stat().st_size / 1024:.0f} KiB, {len(machines)} machines)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
