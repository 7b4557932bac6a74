"""Measure the course's reference figures on a GPU and write <out>/<device>.json.

    python scripts/gpu_reference.py --out lab_utils/data/reference   # on the GPU machine (minutes)
    python scripts/gpu_reference.py --device cpu --out _build/reference --budget-s 20 --min-run-time 0.05

It runs the course's own code: the matmul and copy sweep (lab_utils.bench), batch-1 against
batched latency, the timing pitfall with and without synchronisation, the memory of a training
step against its estimate (lab_utils.memory), recovery from an out-of-memory error, and a short
fine-tune's tokens/s (lab_utils.training). Nothing is estimated or typed in; a measurement that
cannot run on the device is listed under "skipped" with the reason, and the file is rewritten
after every step, so what was measured survives a later failure. The record holds the machine
report, the driver, clocks, power limit and MIG mode (nvidia-smi), the cuBLAS version and the
course's git commit. Each case is timed for at least ``--min-run-time`` seconds (default 1 s:
long enough for the clocks to settle and for a spread over several blocks). On a GPU it also
gives the best matmul of each dtype and the copy as fractions of the catalog's peaks.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import json
import os
import subprocess
import sys
import time
from importlib import metadata
from pathlib import Path

NVIDIA_SMI_FIELDS = (
    "name",
    "driver_version",
    "pstate",
    "clocks.sm",
    "clocks.max.sm",
    "clocks.mem",
    "power.limit",
    "power.draw",
    "temperature.gpu",
    "mig.mode.current",
)


def model_config(device):
    """A tiny GPT sized to give the GPU real work; the default (smallest) one on a CPU test run."""
    from lab_utils import models

    if device.type == "cuda":
        return models.GPTConfig(seq_len=128, n_layers=4, hidden=256, n_heads=4)
    return models.GPTConfig()


def nvidia_smi_state(run=subprocess.run) -> dict:
    """The GPU's driver, clocks (MHz), power (W), temperature and MIG mode from nvidia-smi, by
    field name; {"error": ...} when nvidia-smi cannot answer."""
    try:
        answer = run(
            [
                "nvidia-smi",
                f"--query-gpu={','.join(NVIDIA_SMI_FIELDS)}",
                "--format=csv,noheader,nounits",
                "--id=0",
            ],
            capture_output=True,
            text=True,
            timeout=20,
            check=True,
        ).stdout
    except (OSError, subprocess.SubprocessError) as error:
        return {"error": f"{type(error).__name__}: {error}"}
    values = [value.strip() for value in answer.strip().splitlines()[0].split(",")]
    if len(values) != len(NVIDIA_SMI_FIELDS):
        return {"error": f"nvidia-smi answered {answer.strip()!r}"}
    return dict(zip(NVIDIA_SMI_FIELDS, values))


def cublas_version() -> str | None:
    """The version of the cuBLAS wheel torch loads (nvidia-cublas-cu12 or -cu13), else None."""
    for name in ("nvidia-cublas-cu13", "nvidia-cublas-cu12", "nvidia-cublas"):
        try:
            return f"{name} {metadata.version(name)}"
        except metadata.PackageNotFoundError:
            continue
    return None


def git_commit() -> str | None:
    """The course's git commit (with "+changes" when the tree differs from it), else None."""
    here = Path(__file__).resolve().parent
    try:
        commit = subprocess.run(
            ["git", "-C", str(here), "rev-parse", "HEAD"],
            capture_output=True,
            text=True,
            timeout=20,
            check=True,
        ).stdout.strip()
        changes = subprocess.run(
            ["git", "-C", str(here), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            timeout=20,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return commit + ("+changes" if changes else "")


def software(device) -> dict:
    import torch

    return {
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "cudnn": torch.backends.cudnn.version() if device.type == "cuda" else None,
        "cublas": cublas_version(),
        "course_commit": git_commit(),
    }


def matmul_and_copy(device, budget_s: float, min_run_time: float) -> dict:
    from lab_utils import bench

    on_gpu = device.type == "cuda"
    table = bench.sweep(
        sizes=bench.GPU_SIZES if on_gpu else (256, 512, 1024),
        dtypes=("fp32", "tf32", "bf16", "fp16") if on_gpu else ("fp32",),
        copy_bytes=(2**30,) if on_gpu else (64 * 2**20,),
        device=device,
        budget_s=budget_s,
        min_run_time=min_run_time,
        progress=True,
    )
    rows = [{k: v for k, v in dataclasses.asdict(row).items()} for row in table.rows]
    return {"rows": rows, "skipped_cases": [dataclasses.asdict(case) for case in table.skipped]}


def batch_latency(device, min_run_time: float) -> dict:
    import torch

    from lab_utils import models, timing

    config = model_config(device)
    torch.manual_seed(0)
    model = models.TinyGPT(config).to(device).eval()
    result = {}
    with torch.no_grad():
        for batch in (1, 8, 64):
            tokens = models.random_tokens(config, batch).to(device)
            seconds = timing.measure(
                lambda tokens=tokens: model(tokens), device=device, min_run_time=min_run_time
            ).median_s
            result[f"batch_{batch}"] = {"seconds": seconds, "sequences_per_s": batch / seconds}
    return result


def timing_pitfall(device, min_run_time: float) -> dict:
    import torch

    from lab_utils import machine, timing

    dtype = torch.bfloat16 if device.type == "cuda" else torch.float32
    n = 4096 if device.type == "cuda" else 1024
    a = torch.randn(n, n, device=device, dtype=dtype)
    b = torch.randn(n, n, device=device, dtype=dtype)
    a @ b  # warm up
    machine.synchronize(device)
    started_s = time.perf_counter()
    a @ b  # timed without waiting for the device: measures the launch only
    unsynchronized_s = time.perf_counter() - started_s
    machine.synchronize(device)
    synchronized_s = timing.measure(lambda: a @ b, device=device, min_run_time=min_run_time).median_s
    return {
        "n": n,
        "dtype": str(dtype).replace("torch.", ""),
        "unsynchronized_s": unsynchronized_s,
        "synchronized_median_s": synchronized_s,
    }


def step_memory(device) -> dict:
    import torch

    from lab_utils import memory, memory_measure, models

    config = model_config(device)
    batch = 16
    torch.manual_seed(0)
    model = models.TinyGPT(config).to(device)
    tokens = models.random_tokens(config, batch).to(device)
    measured = memory_measure.measure_training_step(model, tokens)
    state = memory.training_state_bytes(config.n_params, precision="fp32", optimizer="adamw")
    return {
        "measured": dataclasses.asdict(measured),
        "estimate": {
            "params_bytes": state.params_bytes,
            "grads_bytes": state.grads_bytes,
            "optimizer_states_bytes": state.optimizer_states_bytes,
            "activations_bytes": memory.tiny_gpt_activation_bytes(config, batch),
        },
    }


def oom_recovery(device) -> dict:
    import torch

    total = torch.cuda.get_device_properties(device).total_memory
    try:
        torch.empty(2 * total, dtype=torch.uint8, device=device)
        raised = False
    except torch.cuda.OutOfMemoryError:
        raised = True
    torch.cuda.empty_cache()
    check = torch.ones(1024, device=device).sum().item()  # the device still works
    return {"asked_bytes": 2 * total, "raised_out_of_memory": raised, "recovered": check == 1024}


def fine_tune_speed(device) -> dict:
    import torch

    from lab_utils import models, training

    torch.manual_seed(0)
    config = model_config(device)
    batch, steps = (32, 40) if device.type == "cuda" else (8, 8)
    text = training.corpus("domain", 262_144)
    result = {}
    for method in ("full", "lora"):
        run = training.fine_tune(
            models.TinyGPT(config),
            text,
            method=method,
            steps=steps,
            batch=batch,
            device=device,
            max_seconds=20,
        )
        result[method] = {
            "tokens_per_s": run.tokens_per_s,
            "steps": run.steps,
            "loss_first": run.losses[0],
            "loss_last": run.losses[-1],
        }
    return result


def peak_fractions(device_name: str, sweep: dict) -> dict:
    """The best matmul of each measured dtype and the best copy as fractions of the catalog's
    dense peaks for ``device_name`` (looked up by the name torch reports, through the
    catalog's aliases); a dtype the catalog has no peak for is left out and named."""
    from lab_utils import hardware

    spec = hardware.get(device_name)
    rows = sweep["rows"]
    fractions, no_peak = {}, []
    for dtype in dict.fromkeys(r["dtype"] for r in rows if r["kind"] == "matmul"):
        best = max(r["flops_per_s"] for r in rows if r["kind"] == "matmul" and r["dtype"] == dtype)
        if dtype in spec.peak_flops:
            fractions[f"{dtype}_fraction_of_peak"] = best / spec.peak_flops[dtype]
        else:
            no_peak.append(dtype)
    copies = [r["bytes_per_s"] for r in rows if r["kind"] == "copy"]
    if copies and spec.bandwidth_bytes_per_s:
        fractions["copy_fraction_of_bandwidth"] = max(copies) / spec.bandwidth_bytes_per_s
    return {"catalog_device": spec.name, **fractions, "dtypes_without_a_catalog_peak": no_peak}


def write(path: Path, record: dict) -> None:
    """Write the record as JSON, whole: to a temporary file first, then renamed over ``path``."""
    partial = path.with_name(path.name + ".partial")
    partial.write_text(json.dumps(record, indent=1, default=str) + "\n", encoding="utf-8")
    os.replace(partial, path)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    parser.add_argument(
        "--out",
        type=Path,
        required=True,
        help="folder for the JSON; lab_utils/data/reference in a clone to ship it with the course",
    )
    parser.add_argument(
        "--budget-s", type=float, default=120.0, help="time budget of the matmul sweep, seconds"
    )
    parser.add_argument(
        "--min-run-time", type=float, default=1.0, help="seconds each case is timed for (default 1)"
    )
    args = parser.parse_args(argv)
    if not args.min_run_time > 0 or not args.budget_s > 0:
        parser.error("--budget-s and --min-run-time must be > 0")

    import torch

    from lab_utils import machine, reference

    if args.device == "cuda" and not torch.cuda.is_available():
        parser.error("--device cuda: torch sees no CUDA device here; use --device cpu to test the script")
    device = torch.device(args.device)
    report = machine.describe()
    device_name = report.device_name
    on_gpu = device.type == "cuda"
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / f"{reference.slug(device_name)}.json"
    measurements, skipped = {}, {}
    record = {
        "format": reference.FORMAT_VERSION,
        "device": device_name,
        "date": datetime.date.today().isoformat(),
        "machine": dataclasses.asdict(report),
        "software": software(device),
        "gpu_state_before": nvidia_smi_state() if on_gpu else None,
        "min_run_time_s": args.min_run_time,
        "script": "scripts/gpu_reference.py",
        "measurements": measurements,
        "skipped": skipped,
    }
    steps = {
        "matmul_and_copy": lambda: matmul_and_copy(device, args.budget_s, args.min_run_time),
        "peak_fractions": lambda: peak_fractions(device_name, measurements["matmul_and_copy"]),
        "batch_latency": lambda: batch_latency(device, args.min_run_time),
        "timing_pitfall": lambda: timing_pitfall(device, args.min_run_time),
        "step_memory": lambda: step_memory(device),
        "fine_tune_speed": lambda: fine_tune_speed(device),
        "oom_recovery": lambda: oom_recovery(device),
    }
    if not on_gpu:
        del steps["peak_fractions"], steps["oom_recovery"]
        skipped["oom_recovery"] = "needs a CUDA device"
    for name, step in steps.items():
        started_s = time.perf_counter()
        try:
            measurements[name] = step()
        except Exception as error:  # record what failed, keep measuring the rest
            skipped[name] = f"{type(error).__name__}: {error}"
        print(f"{name}: {time.perf_counter() - started_s:.1f} s", file=sys.stderr)
        if name == "peak_fractions" and name in measurements:
            print(json.dumps(measurements[name], indent=2))
        write(path, record)
    if on_gpu:
        record["gpu_state_after"] = nvidia_smi_state()
        write(path, record)
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
