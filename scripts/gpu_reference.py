"""Measure the course's reference figures on a GPU and write lab_utils/data/reference/<device>.json.

    python scripts/gpu_reference.py                      # on the GPU machine (about 3 minutes)
    python scripts/gpu_reference.py --device cpu --out _build/reference --budget-s 20

It runs the course's own code: the matmul and copy sweep (lab_utils.bench), batch-1 against
batched latency, the timing pitfall with and without synchronisation, the memory of a training
step against its estimate (lab_utils.memory), recovery from an out-of-memory error, and a short
fine-tune's tokens/s (lab_utils.training). Nothing is estimated or typed in; a measurement that
cannot run on the device is listed under "skipped" with the reason. On a GPU it also prints the
bf16 matmul and copy figures as fractions of the catalog's peaks.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import json
import sys
import time
from pathlib import Path


def model_config(device):
    """A tiny GPT sized to give the GPU real work; the default (smallest) one on a CPU test run."""
    from lab_utils import models

    if device.type == "cuda":
        return models.GPTConfig(seq_len=128, n_layers=4, hidden=256, n_heads=4)
    return models.GPTConfig()


def matmul_and_copy(device, budget_s: float) -> dict:
    from lab_utils import bench

    on_gpu = device.type == "cuda"
    table = bench.sweep(
        sizes=(1024, 2048, 4096, 8192) if on_gpu else (256, 512, 1024),
        dtypes=("fp32", "tf32", "bf16", "fp16") if on_gpu else ("fp32",),
        copy_bytes=(2**30,) if on_gpu else (64 * 2**20,),
        device=device, budget_s=budget_s, progress=True,
    )
    rows = [{k: v for k, v in dataclasses.asdict(row).items()} for row in table.rows]
    return {"rows": rows, "skipped_cases": [dataclasses.asdict(case) for case in table.skipped]}


def batch_latency(device) -> dict:
    import torch
    from lab_utils import models, timing

    config = model_config(device)
    torch.manual_seed(0)
    model = models.TinyGPT(config).to(device).eval()
    result = {}
    with torch.no_grad():
        for batch in (1, 8, 64):
            tokens = models.random_tokens(config, batch).to(device)
            seconds = timing.measure(lambda: model(tokens), device=device, min_run_time=0.3).median_s
            result[f"batch_{batch}"] = {"seconds": seconds, "sequences_per_s": batch / seconds}
    return result


def timing_pitfall(device) -> dict:
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
    synchronized_s = timing.measure(lambda: a @ b, device=device, min_run_time=0.3).median_s
    return {"n": n, "dtype": str(dtype).replace("torch.", ""), "unsynchronized_s": unsynchronized_s,
            "synchronized_median_s": synchronized_s}


def step_memory(device) -> dict:
    import torch
    from lab_utils import memory, models

    config = model_config(device)
    batch = 16
    torch.manual_seed(0)
    model = models.TinyGPT(config).to(device)
    tokens = models.random_tokens(config, batch).to(device)
    measured = memory.measure_training_step(model, tokens)
    state = memory.training_state_bytes(config.n_params, precision="fp32", optimizer="adamw")
    return {
        "measured": dataclasses.asdict(measured),
        "estimate": {"params_bytes": state.params_bytes, "grads_bytes": state.grads_bytes,
                     "optimizer_states_bytes": state.optimizer_states_bytes,
                     "activations_bytes": memory.tiny_gpt_activation_bytes(config, batch)},
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
        run = training.fine_tune(models.TinyGPT(config), text, method=method, steps=steps, batch=batch,
                                 device=device, max_seconds=20)
        result[method] = {"tokens_per_s": run.tokens_per_s, "steps": run.steps,
                          "loss_first": run.losses[0], "loss_last": run.losses[-1]}
    return result


def peak_fractions(report, measurements: dict) -> dict:
    """bf16 matmul and copy bandwidth as fractions of the catalog's dense peaks."""
    from lab_utils import hardware

    spec = hardware.get(report.device_name)
    rows = measurements["matmul_and_copy"]["rows"]
    bf16 = max((r["flops_per_s"] for r in rows if r["kind"] == "matmul" and r["dtype"] == "bf16"), default=0.0)
    copy = max((r["bytes_per_s"] for r in rows if r["kind"] == "copy"), default=0.0)
    return {"catalog_device": spec.name, "bf16_fraction_of_peak": bf16 / spec.peak_flops["bf16"],
            "copy_fraction_of_bandwidth": copy / spec.bandwidth_bytes_per_s}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    parser.add_argument("--out", type=Path, default=None, help="folder for the JSON (default: lab_utils/data/reference)")
    parser.add_argument("--budget-s", type=float, default=120.0, help="time budget of the matmul sweep, seconds")
    args = parser.parse_args(argv)

    import torch
    from lab_utils import machine, reference

    if args.device == "cuda" and not torch.cuda.is_available():
        parser.error("--device cuda: torch sees no CUDA device here; use --device cpu to test the script")
    device = torch.device(args.device)
    report = machine.describe()
    device_name = report.device_name
    steps = {"matmul_and_copy": lambda: matmul_and_copy(device, args.budget_s),
             "batch_latency": lambda: batch_latency(device), "timing_pitfall": lambda: timing_pitfall(device),
             "step_memory": lambda: step_memory(device), "fine_tune_speed": lambda: fine_tune_speed(device)}
    if device.type == "cuda":
        steps["oom_recovery"] = lambda: oom_recovery(device)
    measurements, skipped = {}, {}
    if device.type != "cuda":
        skipped["oom_recovery"] = "needs a CUDA device"
    for name, step in steps.items():
        started_s = time.perf_counter()
        try:
            measurements[name] = step()
        except Exception as error:  # record what failed, keep measuring the rest
            skipped[name] = f"{type(error).__name__}: {error}"
        print(f"{name}: {time.perf_counter() - started_s:.1f} s", file=sys.stderr)
    if device.type == "cuda" and "matmul_and_copy" in measurements:
        measurements["peak_fractions"] = peak_fractions(report, measurements)
        print(json.dumps(measurements["peak_fractions"], indent=2))
    out = reference.default_directory() if args.out is None else args.out
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"{reference.slug(device_name)}.json"
    record = {"format": reference.FORMAT_VERSION, "device": device_name,
              "date": datetime.date.today().isoformat(), "machine": dataclasses.asdict(report),
              "script": "scripts/gpu_reference.py", "measurements": measurements, "skipped": skipped}
    path.write_text(json.dumps(record, indent=1, default=str) + "\n", encoding="utf-8")
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
