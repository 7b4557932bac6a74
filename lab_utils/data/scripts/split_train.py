"""Four ways to split the tiny GPT over ranks, trained for real: one process per rank, torchrun.

    torchrun --standalone --nproc_per_node 2 split_train.py --out result.json
    torchrun --standalone --nproc_per_node 2 split_train.py --split fsdp,tp --out result.json

Every split trains ``lab_utils.models.TinyGPT`` from the same initial weights on the same
batches (``--batch`` sequences per step, random tokens) with AdamW, on gloo (CPU):

- ``dp``: DistributedDataParallel, each rank half of the batch, gradients all-reduced;
- ``fsdp``: FSDP2 (``fully_shard`` on each block and on the whole model), ZeRO-3;
- ``tp``: tensor parallel (``parallelize_module``): attention qkv and MLP up-projection
  column-wise, attention output and MLP down-projection row-wise; embeddings, norms replicated;
- ``pp``: a two-stage pipeline (``torch.distributed.pipelining``, GPipe schedule,
  ``--microbatches``), the first half of the blocks with the embeddings on rank 0, the rest
  with the final norm and the output layer on rank 1; the output layer is a copy of the
  embedding (tied), its gradients summed over the two stages each step.

Rank 0 first trains the same model in one process on the whole batch (the reference). Per
split it reports the losses, each rank's state bytes (``distributed.held_state_bytes``), the
bytes each rank's collectives sent during the last step (``distributed.count_collectives``)
and, for the pipeline, the seconds each rank computed during the last step and the bubble: the
share of the stages' time, from the step's common start to its common end, that they sat idle.
Rank 0 writes JSON to ``--out``.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
import types
from pathlib import Path

SPLITS = ("dp", "fsdp", "tp", "pp")


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, type=Path, help="JSON file that rank 0 writes")
    parser.add_argument(
        "--split", default=",".join(SPLITS), help="comma-separated, from " + ", ".join(SPLITS)
    )
    parser.add_argument("--steps", type=int, default=2, help="optimizer steps per split")
    parser.add_argument("--batch", type=int, default=32, help="sequences per step (all ranks together)")
    parser.add_argument("--microbatches", type=int, default=4, help="pipeline micro-batches per step")
    parser.add_argument("--layers", type=int, default=4, help="transformer blocks of the tiny GPT")
    parser.add_argument("--hidden", type=int, default=128, help="features of the tiny GPT")
    parser.add_argument("--lr", type=float, default=3e-3, help="AdamW learning rate")
    parser.add_argument("--seed", type=int, default=0, help="seeds the model and the data")
    args = parser.parse_args(argv)
    args.split = [s.strip() for s in args.split.split(",") if s.strip()]
    if not args.split or any(s not in SPLITS for s in args.split):
        parser.error(f"--split: give some of {', '.join(SPLITS)}, comma-separated")
    if min(args.steps, args.batch, args.microbatches, args.layers, args.hidden) < 1:
        parser.error("--steps, --batch, --microbatches, --layers and --hidden must be >= 1")
    return args


def config_of(args):
    from lab_utils import models

    return models.GPTConfig(n_layers=args.layers, hidden=args.hidden)


def fresh_model(args):
    import torch

    from lab_utils import models

    torch.manual_seed(args.seed)
    return models.TinyGPT(config_of(args))


def batch_of(args, step):
    from lab_utils import models

    return models.random_tokens(config_of(args), args.batch, seed=args.seed * 1000 + step)


def loss_of(logits, tokens):
    """Next-token cross-entropy, averaged over every predicted position."""
    import torch

    return torch.nn.functional.cross_entropy(logits[:, :-1].flatten(0, 1), tokens[:, 1:].flatten())


def adamw(parameters, args):
    import torch

    return torch.optim.AdamW(parameters, lr=args.lr, foreach=False)


# --- the four splits: each returns (module whose parameters this rank holds, optimizer, step(step) -> loss)


def training(model, args, rank, world):
    """AdamW on ``model``, and a step that trains it on share ``rank`` of ``world`` of the batch."""
    optimizer = adamw(model.parameters(), args)
    share = args.batch // world

    def step(index):
        tokens = batch_of(args, index)[rank * share : (rank + 1) * share]
        loss = loss_of(model(tokens), tokens)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        return loss.detach()

    return model, optimizer, step


def reference_losses(args) -> list[float]:
    """The same training in one process, on the whole batch: the losses every split must match."""
    _, _, step = training(fresh_model(args), args, rank=0, world=1)
    return [step(index).item() for index in range(args.steps)]


def setup_dp(args, rank, world):
    from torch.nn.parallel import DistributedDataParallel

    model = DistributedDataParallel(fresh_model(args), broadcast_buffers=False)  # the masks never change
    return training(model, args, rank, world)


def setup_fsdp(args, rank, world):
    from torch.distributed.fsdp import fully_shard

    model = fresh_model(args)
    for block in model.blocks:
        fully_shard(block)
    fully_shard(model)  # the root: embeddings and final norm, kept gathered from forward to backward
    return training(model, args, rank, world)


def _attention_on_local_heads(self, x):
    """CausalSelfAttention's forward on this rank's heads: ``qkv`` returns their q, k, v only."""
    import torch

    batch, seq, _ = x.shape
    q, k, v = self.qkv(x).chunk(3, dim=2)
    heads = q.shape[-1] // self.head_dim
    q, k, v = (t.view(batch, seq, heads, self.head_dim).transpose(1, 2) for t in (q, k, v))
    scores = (q @ k.transpose(-2, -1)) / math.sqrt(self.head_dim)
    scores = scores.masked_fill(~self.mask[:seq, :seq], float("-inf"))
    out = torch.softmax(scores, dim=-1) @ v
    return self.proj(out.transpose(1, 2).reshape(batch, seq, heads * self.head_dim))


def setup_tp(args, rank, world):
    import torch
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel, parallelize_module

    mesh = init_device_mesh("cpu", (world,))
    model = fresh_model(args)
    hidden, heads = model.config.hidden, model.config.n_heads
    if heads % world:
        raise SystemExit(f"tensor parallel needs n_heads={heads} divisible by {world} ranks")
    # qkv's rows are [q | k | v]; a column-wise split must give each rank whole heads of all
    # three, so reorder them to [q0 k0 v0 | q1 k1 v1 | ...] first (the same function).
    order = torch.arange(3 * hidden).view(3, world, hidden // world).transpose(0, 1).reshape(-1)
    plan = {
        "attention.qkv": ColwiseParallel(),
        "attention.proj": RowwiseParallel(),
        "mlp.layers.0": ColwiseParallel(),
        "mlp.layers.2": RowwiseParallel(),
    }
    for block in model.blocks:
        attention = block.attention
        with torch.no_grad():
            attention.qkv.weight.copy_(attention.qkv.weight[order])
            attention.qkv.bias.copy_(attention.qkv.bias[order])
        attention.head_dim = hidden // heads
        attention.forward = types.MethodType(_attention_on_local_heads, attention)
        parallelize_module(block, mesh, plan)
    return training(model, args, rank=0, world=1)  # every rank the whole batch


def setup_pp(args, rank, world):
    import torch
    import torch.distributed as dist
    from torch import nn
    from torch.distributed.pipelining import PipelineStage, ScheduleGPipe

    if world != 2:
        raise SystemExit("the pipeline split runs on 2 ranks")
    gpt = fresh_model(args)
    half = len(gpt.blocks) - len(gpt.blocks) // 2

    class First(nn.Module):  # embeddings and the first blocks
        def __init__(self):
            super().__init__()
            self.token_embedding, self.position_embedding = gpt.token_embedding, gpt.position_embedding
            self.blocks = gpt.blocks[:half]

        def forward(self, tokens):
            x = self.token_embedding(tokens) + self.position_embedding(torch.arange(tokens.shape[1]))
            for block in self.blocks:
                x = block(x)
            return x

    class Last(nn.Module):  # the other blocks, the final norm, the (tied) output layer
        def __init__(self):
            super().__init__()
            self.blocks, self.norm = gpt.blocks[half:], gpt.norm
            self.output = nn.Parameter(gpt.token_embedding.weight.detach().clone())

        def forward(self, x):
            for block in self.blocks:
                x = block(x)
            return self.norm(x) @ self.output.T

    module = First() if rank == 0 else Last()
    tied = module.token_embedding.weight if rank == 0 else module.output
    stage = PipelineStage(module, rank, world, torch.device("cpu"))
    schedule = ScheduleGPipe(stage, args.microbatches, loss_fn=loss_of)  # gradients scaled by 1/microbatches
    optimizer = adamw(module.parameters(), args)
    busy = {"s": 0.0}
    for name in ("forward_one_chunk", "backward_one_chunk"):  # the stage's compute, timed
        method = getattr(stage, name)

        def timed(*a, _method=method, **k):
            started = time.perf_counter()
            try:
                return _method(*a, **k)
            finally:
                busy["s"] += time.perf_counter() - started

        setattr(stage, name, timed)

    def step(index):
        tokens = batch_of(args, index)
        optimizer.zero_grad(set_to_none=True)
        busy["s"] = 0.0
        dist.barrier()
        started = time.perf_counter()
        losses = []
        if rank == 0:
            schedule.step(tokens)
        else:
            schedule.step(target=tokens, losses=losses)
        dist.barrier()  # the pipeline's step ends when its last stage is done: one window for all
        step_s = time.perf_counter() - started
        busy_s = busy["s"]
        dist.all_reduce(tied.grad)  # the tied embedding: both stages' gradients, summed
        optimizer.step()
        loss = torch.stack(losses).mean() if losses else torch.zeros(())
        dist.broadcast(loss, src=world - 1)
        step.timing = {"step_s": step_s, "busy_s": busy_s}
        return loss

    return module, optimizer, step


SETUP = {"dp": setup_dp, "fsdp": setup_fsdp, "tp": setup_tp, "pp": setup_pp}


def run_split(name, args, rank, world):
    """Train one split; every rank returns its losses, state bytes, counted collectives (last step)."""
    import torch.distributed as dist

    from lab_utils import distributed

    module, optimizer, step = SETUP[name](args, rank, world)
    losses, counted, timing = [], None, None
    for index in range(args.steps):
        last = index == args.steps - 1  # the first steps also exchange shapes and initial weights
        with distributed.count_collectives() as counter:
            loss = step(index)
        if last:
            counted = counter
            timing = getattr(step, "timing", None)
        loss = loss.clone()
        if name in ("dp", "fsdp"):  # each rank saw its share of the batch: the batch's mean loss
            dist.all_reduce(loss)
            loss /= world
        losses.append(loss.item())
    held = distributed.held_state_bytes(module, optimizer)
    return {
        "losses": losses,
        "params_bytes": held.params_bytes,
        "grads_bytes": held.grads_bytes,
        "optimizer_states_bytes": held.optimizer_states_bytes,
        "state_bytes": held.total_bytes,
        "sent_bytes": counted.sent_bytes,
        "collectives": counted.by_op(),
        "timing": timing,
    }


def main(argv=None) -> int:
    args = parse_args(argv)
    import torch
    import torch.distributed as dist

    from lab_utils import distributed

    torch.set_num_threads(1)
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    try:
        if args.batch % world or args.batch % args.microbatches:
            raise SystemExit(
                f"--batch={args.batch} must divide by {world} ranks and {args.microbatches} micro-batches"
            )
        result = {
            "world": world,
            "steps": args.steps,
            "batch": args.batch,
            "microbatches": args.microbatches,
            "config": vars(config_of(args)),
            "torch": torch.__version__,
            "splits": {},
        }
        result["reference_losses"] = reference_losses(args) if rank == 0 else None
        for name in args.split:
            started = time.perf_counter()
            mine = run_split(name, args, rank, world)
            every = [None] * world
            dist.all_gather_object(every, mine)
            result["splits"][name] = {
                "losses": every[0]["losses"],
                "ranks": every,
                "seconds": time.perf_counter() - started,
            }
            if name == "pp":  # the share of the stages' time, start to end of the step, spent idle
                busy_s = sum(r["timing"]["busy_s"] for r in every)
                result["splits"][name]["bubble"] = 1 - busy_s / sum(r["timing"]["step_s"] for r in every)
        if rank == 0:
            distributed.write_result(args.out, result)  # atomic: readers never see half a file
        dist.barrier()
    finally:
        dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
