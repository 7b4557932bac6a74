"""Data-parallel training with torch.distributed (DDP): one process per rank, launched by torchrun.

    torchrun --standalone --nproc_per_node 2 ddp_train.py --out result.json
    torchrun --nnodes 4 --node_rank R --nproc_per_node 8 --master_addr HOST --master_port 29500 \\
        ddp_train.py --out result.json          # the same script on every node of a cluster

Every rank builds the same model from ``--seed`` and trains on its own batches (generated
text, reproducible from the seed, the rank and the step); DDP averages the gradients with an
all-reduce after each backward pass, so every rank takes the same optimizer step. The backend
is chosen per node: NCCL with one GPU per rank when there are enough GPUs, gloo on the CPU
otherwise. Rank 0 writes a JSON result to ``--out``: each rank's parameter digest (SHA-256 of
the bits), the steps, the losses and the seconds each phase took; with ``--allreduce-sizes``,
first the time of an all-reduce for each message size
(``lab_utils.distributed.time_all_reduce``).
"""

from __future__ import annotations

import argparse
import inspect
import os
import platform
import statistics
import sys
import time
from datetime import timedelta
from pathlib import Path


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, type=Path, help="JSON file that rank 0 writes")
    parser.add_argument(
        "--model", choices=("gpt", "mlp"), default="gpt", help="lab_utils.models.TinyGPT or MLP"
    )
    parser.add_argument(
        "--steps", type=int, default=20, help="training steps (each one all-reduce of the gradients)"
    )
    parser.add_argument("--batch", type=int, default=8, help="sequences (or rows) per rank per step")
    parser.add_argument("--seed", type=int, default=0, help="seeds the model and the data")
    parser.add_argument("--lr", type=float, default=3e-3, help="AdamW learning rate")
    parser.add_argument(
        "--compute-steps",
        type=int,
        default=5,
        help="forward+backward passes timed without the all-reduce (DDP no_sync), before training",
    )
    parser.add_argument(
        "--allreduce-sizes",
        type=int,
        nargs="*",
        default=[],
        help="first time all-reduces of these message sizes in bytes (none by default)",
    )
    parser.add_argument("--allreduce-repeats", type=int, default=5, help="timed rounds per all-reduce size")
    parser.add_argument("--backend", choices=("auto", "gloo", "nccl"), default="auto")
    parser.add_argument(
        "--timeout-s", type=float, default=120.0, help="give up on a collective after this long"
    )
    args = parser.parse_args(argv)
    for name in ("steps", "batch"):
        if getattr(args, name) < 1:
            parser.error(f"--{name}={getattr(args, name)}: must be >= 1")
    if args.compute_steps < 0 or args.lr <= 0 or args.timeout_s <= 0 or args.allreduce_repeats < 1:
        parser.error("--compute-steps must be >= 0, --lr and --timeout-s > 0, --allreduce-repeats >= 1")
    if any(size < 4 for size in args.allreduce_sizes):
        parser.error(
            f"--allreduce-sizes={args.allreduce_sizes}: every size must be >= 4 bytes (one fp32 value)"
        )
    return args


def make_model(kind: str):
    from lab_utils import models

    if kind == "gpt":
        return models.TinyGPT(models.GPTConfig(seq_len=32, n_layers=2, hidden=64, n_heads=4))
    return models.MLP([64, 256, 256, 64])


def make_batch(kind: str, model, text, rank: int, step: int, batch: int, seed: int):
    """This rank's batch for this step: the same on every run, different on every rank.
    Returns (inputs, targets)."""
    import torch

    generator = torch.Generator().manual_seed(seed * 1_000_003 + rank * 10_007 + step)
    if kind == "gpt":
        seq_len = model.config.seq_len
        starts = torch.randint(len(text) - seq_len - 1, (batch,), generator=generator)
        window = text[starts[:, None] + torch.arange(seq_len + 1)]
        return window[:, :-1], window[:, 1:]
    inputs = torch.randn(batch, 64, generator=generator)
    return inputs, torch.sin(inputs).flip(1)  # a fixed smooth target the MLP can learn


def loss_of(kind: str, model, inputs, targets):
    import torch.nn.functional as F

    outputs = model(inputs)
    if kind == "gpt":
        return F.cross_entropy(outputs.reshape(-1, outputs.shape[-1]), targets.reshape(-1))
    return F.mse_loss(outputs, targets)


def main(argv=None) -> int:
    args = parse_args(argv)
    clock = {"started": time.time()}  # wall-clock marks of this process's phases, for the report
    if "RANK" not in os.environ:
        print(
            "Launch this script with torchrun, e.g.\n  torchrun --standalone --nproc_per_node 2 "
            f"{Path(__file__).name} --out result.json",
            file=sys.stderr,
        )
        return 2

    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel

    from lab_utils import distributed, machine, training

    clock["imported"] = time.time()
    rank, world_size = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    local_rank, local_world_size = int(os.environ["LOCAL_RANK"]), int(os.environ["LOCAL_WORLD_SIZE"])
    backend = distributed.choose_backend(torch.cuda.device_count(), local_world_size)
    if args.backend != "auto" and args.backend != backend.name:
        device_type = "cuda" if args.backend == "nccl" else "cpu"
        backend = distributed.Backend(args.backend, device_type, "chosen with --backend")
    device = torch.device("cuda", local_rank) if backend.device_type == "cuda" else torch.device("cpu")
    if device.type == "cuda":
        torch.cuda.set_device(device)
    bind = {}
    if device.type == "cuda" and "device_id" in inspect.signature(dist.init_process_group).parameters:
        bind["device_id"] = device  # NCCL: this rank's GPU, known up front (torch >= 2.3)
    dist.init_process_group(backend.name, timeout=timedelta(seconds=args.timeout_s), **bind)
    clock["joined"] = time.time()
    try:
        # 0. Optional: all-reduce time against message size, on the same processes and backend.
        allreduce = (
            [
                {"message_bytes": t.message_bytes, "median_s": t.median_s, "min_s": t.min_s}
                for t in distributed.time_all_reduce(
                    args.allreduce_sizes, repeats=args.allreduce_repeats, device=device
                )
            ]
            if args.allreduce_sizes
            else []
        )
        clock["allreduce_done"] = time.time()

        torch.manual_seed(args.seed)  # the same initial weights on every rank (DDP also broadcasts rank 0's)
        model = make_model(args.model).to(device)
        ddp = DistributedDataParallel(model, device_ids=[local_rank] if device.type == "cuda" else None)
        optimizer = torch.optim.AdamW(ddp.parameters(), lr=args.lr)
        clock["ddp_ready"] = time.time()  # DDP's constructor imports torch._dynamo: seconds on a small CPU
        text = None
        if args.model == "gpt":
            corpus = training.corpus("domain", n_bytes=32_768, seed=args.seed)
            text = torch.frombuffer(bytearray(corpus), dtype=torch.uint8).long()

        def batch_for(step):
            inputs, targets = make_batch(args.model, model, text, rank, step, args.batch, args.seed)
            return inputs.to(device), targets.to(device)

        # 1. Compute alone: forward + backward under no_sync() (no all-reduce), no optimizer step,
        #    so the parameters stay as they are.
        compute_s = []
        for step in range(args.compute_steps + 1):  # the first pass warms up and is not counted
            inputs, targets = batch_for(-1 - step)
            dist.barrier()
            machine.synchronize(device)
            started = time.perf_counter()
            with ddp.no_sync():
                loss_of(args.model, ddp, inputs, targets).backward()
            machine.synchronize(device)
            if step:
                compute_s.append(time.perf_counter() - started)
            optimizer.zero_grad(set_to_none=True)

        # 2. Training: forward, backward (DDP all-reduces the gradients bucket by bucket as the
        #    backward pass produces them), optimizer step.
        fwd_bwd_s, step_s, losses = [], [], []
        dist.barrier()
        machine.synchronize(device)
        training_started = time.perf_counter()
        for step in range(args.steps):
            inputs, targets = batch_for(step)
            started = time.perf_counter()
            optimizer.zero_grad(set_to_none=True)
            loss = loss_of(args.model, ddp, inputs, targets)
            loss.backward()
            machine.synchronize(device)
            gradients_ready = time.perf_counter()  # averaged over the ranks by now
            optimizer.step()
            machine.synchronize(device)
            fwd_bwd_s.append(gradients_ready - started)
            step_s.append(time.perf_counter() - started)
            losses.append(loss.detach())
        training_s = time.perf_counter() - training_started
        clock["training_done"] = time.time()

        # 3. Compare the ranks: every rank's digest and the mean loss over ranks.
        digest = distributed.parameter_digest(ddp.module)
        digests = [None] * world_size
        parameter_sum = float(sum(p.detach().double().sum() for p in model.parameters()))
        dist.all_gather_object(
            digests,
            {
                "rank": rank,
                "host": platform.node(),
                "device": str(device),
                "digest": digest,
                "parameter_sum": parameter_sum,
            },
        )
        mean_losses = torch.stack(losses).to(torch.float64)
        dist.all_reduce(mean_losses)
        mean_losses = (mean_losses / world_size).cpu().tolist()
        optimizer_state_bytes = sum(
            t.numel() * t.element_size()
            for state in optimizer.state.values()
            for t in state.values()
            if torch.is_tensor(t)
        )
        if rank == 0:
            import psutil

            clock["process_created"] = psutil.Process().create_time()
            result = {
                "model": args.model,
                "backend": backend.name,
                "backend_reason": backend.reason,
                "world_size": world_size,
                "nnodes": world_size // local_world_size,
                "torch": torch.__version__,
                "threads_per_rank": torch.get_num_threads(),
                "steps": args.steps,
                "batch_per_rank": args.batch,
                "n_params": sum(p.numel() for p in model.parameters()),
                "gradient_bytes": sum(
                    p.numel() * p.element_size() for p in model.parameters() if p.requires_grad
                ),
                "optimizer_state_bytes_rank0": optimizer_state_bytes,
                "ranks": digests,
                "allreduce": allreduce,
                "identical": len({entry["digest"] for entry in digests}) == 1,
                "losses": mean_losses,
                "training_seconds": training_s,
                # medians per step: forward + backward without / with the all-reduce, whole step
                "fwd_bwd_seconds_local": statistics.median(compute_s) if compute_s else None,
                "fwd_bwd_seconds_ddp": statistics.median(fwd_bwd_s),
                "step_seconds": statistics.median(step_s),
                # time.time() marks: process_created, started, imported, joined, allreduce_done, ddp_ready,
                # training_done
                "rank0_clock": clock,
            }
            distributed.write_result(args.out, result)  # atomic: readers never see half a file
        dist.barrier()
    finally:
        dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
