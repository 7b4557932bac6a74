"""Measuring inside the ranks ``lab_utils.distributed`` launches: :func:`parameter_digest`
fingerprints a model's parameters bit for bit, :func:`time_all_reduce` times all-reduces,
:func:`count_collectives` counts the bytes every collective and point-to-point call of a rank
moves, and :func:`held_state_bytes` adds up the weights, gradients and optimizer state a rank
holds (its shards only). They import torch, lazily; ``lab_utils.distributed`` names them all.
"""

from __future__ import annotations

import contextlib
import hashlib
import statistics
import time
from dataclasses import dataclass

from lab_utils import checks
from lab_utils.comms import (
    bus_bandwidth_bytes_per_s,
)

# --- inside the launched processes (torch) -------------------------------------------------


def parameter_digest(module) -> str:
    """SHA-256 of every parameter's bytes, in ``named_parameters`` order: equal digests mean
    bit-identical parameters (names, shapes and dtypes included)."""
    import torch

    if not isinstance(module, torch.nn.Module):
        raise TypeError(f"module must be a torch.nn.Module, got {type(module).__name__}")
    digest = hashlib.sha256()
    for name, parameter in module.named_parameters():
        values = parameter.detach().to("cpu").contiguous().reshape(-1)
        digest.update(f"{name}:{tuple(parameter.shape)}:{parameter.dtype};".encode())
        digest.update(values.view(torch.uint8).numpy().tobytes())
    return digest.hexdigest()


@dataclass(frozen=True)
class AllReduceTiming:
    """Seconds of one all-reduce of ``message_bytes`` (fp32 values) over ``n_ranks`` ranks:
    median and fastest of the repeats, each the slowest rank's time."""

    message_bytes: int
    median_s: float
    min_s: float
    n_ranks: int

    @property
    def bus_bandwidth_bytes_per_s(self) -> float:
        return bus_bandwidth_bytes_per_s(self.message_bytes, self.median_s, self.n_ranks)


def time_all_reduce(sizes_bytes, *, repeats: int = 5, device=None) -> tuple[AllReduceTiming, ...]:
    """Time ``torch.distributed.all_reduce`` for each message size; call it on every rank.

    Needs an initialized process group. Not ``timing.measure``: its adaptive repeat count could
    differ between ranks, and a collective that one rank calls more often than another hangs.
    Here every rank makes the same calls: per size, one warm-up, then ``repeats`` timed rounds,
    each starting at a barrier and counting ``calls`` back-to-back all-reduces (more for small
    messages, so the clock resolves them). A round's time is the slowest rank's.
    """
    import torch
    import torch.distributed as dist

    from lab_utils import machine

    if not dist.is_available() or not dist.is_initialized():
        raise RuntimeError("time_all_reduce needs torch.distributed initialized (run it under torchrun)")
    sizes = [checks.count(f"sizes_bytes[{i}]", size, minimum=4) for i, size in enumerate(sizes_bytes)]
    repeats = checks.count("repeats", repeats)
    device = machine.as_device("cpu" if device is None else device)
    n_ranks = dist.get_world_size()
    results = []
    for size in sizes:
        tensor = torch.zeros(size // 4, dtype=torch.float32, device=device)
        calls = max(1, min(10, 2**18 // size))
        dist.all_reduce(tensor)  # warm-up: connections, buffers
        rounds = torch.empty(repeats, dtype=torch.float64)
        for index in range(repeats):
            dist.barrier()
            machine.synchronize(device)
            started = time.perf_counter()
            for _ in range(calls):
                dist.all_reduce(tensor)
            machine.synchronize(device)
            rounds[index] = (time.perf_counter() - started) / calls
        slowest = rounds.to(device)
        dist.all_reduce(slowest, op=dist.ReduceOp.MAX)
        per_round = slowest.cpu().tolist()
        results.append(
            AllReduceTiming(
                message_bytes=size,
                median_s=statistics.median(per_round),
                min_s=min(per_round),
                n_ranks=n_ranks,
            )
        )
        del tensor
    return tuple(results)


# --- bytes on the wire and bytes held, counted inside a rank ---------------------------------

_SENT_SHARE = {  # op name (c10d and functional spellings) -> bytes sent per message byte, N ranks
    "allreduce": lambda n: 2 * (n - 1) / n,
    "all_reduce": lambda n: 2 * (n - 1) / n,
    "allgather": lambda n: (n - 1) / n,
    "all_gather": lambda n: (n - 1) / n,
    "reduce_scatter": lambda n: (n - 1) / n,
    "broadcast": lambda n: (n - 1) / n,
    "send": lambda n: 1.0,
    "recv": lambda n: 0.0,
    "alltoall": lambda n: (n - 1) / n,
    "gather": lambda n: (n - 1) / n,
    "scatter": lambda n: (n - 1) / n,
    "reduce": lambda n: (n - 1) / n,
}
"""Ring algorithms: an all-reduce sends 2(N-1)/N of its message per rank, an all-gather and a
reduce-scatter (N-1)/N of the whole (gathered or scattered) tensor, a send all of it."""


@dataclass(frozen=True)
class CollectiveCall:
    """One collective or point-to-point call on this rank: the op, the ranks in its group, the
    bytes of its whole message (a gathered output, a scattered input, a sent tensor) and the
    bytes this rank sends for it under a ring algorithm (``comms``)."""

    op: str
    n_ranks: int
    message_bytes: int
    sent_bytes: float


@dataclass
class CollectiveCounter:
    """What :func:`count_collectives` saw: every call, and their totals."""

    calls: list

    @property
    def sent_bytes(self) -> float:
        return sum(call.sent_bytes for call in self.calls)

    @property
    def message_bytes(self) -> int:
        return sum(call.message_bytes for call in self.calls)

    def by_op(self) -> dict[str, dict]:
        """{op: {"calls", "message_bytes", "sent_bytes"}}, in order of first use."""
        found: dict[str, dict] = {}
        for call in self.calls:
            entry = found.setdefault(call.op, {"calls": 0, "message_bytes": 0, "sent_bytes": 0.0})
            entry["calls"] += 1
            entry["message_bytes"] += call.message_bytes
            entry["sent_bytes"] += call.sent_bytes
        return found


def _collective_call(name: str, args) -> CollectiveCall | None:
    """The :class:`CollectiveCall` of a dispatched op, or None when ``name`` moves no data
    (``wait_tensor``, bookkeeping) or is not a collective."""
    import torch.distributed as dist

    from lab_utils import torch_compat

    namespace, _, op = name.partition(".")
    op = op.split(".")[0].strip("_")
    if namespace not in ("c10d", "_c10d_functional"):
        return None
    kind = next((k for k in _SENT_SHARE if k in op), None)
    if kind is None:
        return None
    groups = [arg for arg in args if isinstance(arg, dist.ProcessGroup)]
    names = [arg for arg in args if isinstance(arg, str)]  # a functional op's (reduce op,) group name
    if groups:
        n_ranks = groups[0].size()
    elif names and namespace == "_c10d_functional":
        n_ranks = torch_compat.process_group_size(names[-1])
    else:
        n_ranks = dist.get_world_size()
    sizes = [t.numel() * t.element_size() for t in torch_compat.tensors_in(list(args))]
    if kind in ("allgather", "all_gather"):  # the gathered whole
        if namespace == "_c10d_functional":  # (input, group_size, group_name)
            message = n_ranks * sizes[0]
        elif op.startswith("allgather_base") or "into_tensor" in op:  # (output, input)
            message = sizes[0]
        else:  # (output lists, inputs)
            message = sum(sizes[:-1])
    elif kind == "reduce_scatter":  # the scattered whole: (output, input) in c10d, (input, ...) functional
        message = sizes[-1] if namespace == "c10d" else sizes[0]
    else:
        message = sum(sizes)
    return CollectiveCall(op, n_ranks, message, _SENT_SHARE[kind](n_ranks) * message)


@contextlib.contextmanager
def count_collectives():
    """Count, on this rank, every collective and send/receive that runs inside the block.

    Yields a :class:`CollectiveCounter`. Catches the calls where torch dispatches them (a
    ``TorchDispatchMode``): ``dist.all_reduce`` and friends, DDP's gradient buckets, FSDP's
    all-gathers and reduce-scatters, DTensor's functional collectives (tensor parallelism) and
    the pipeline's sends, in the forward and the backward pass alike.
    """
    from lab_utils import torch_compat

    counter = CollectiveCounter(calls=[])

    class _Counting(torch_compat.dispatch_mode_base()):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            call = _collective_call(str(func), args)
            if call is not None:
                counter.calls.append(call)
            return func(*args, **(kwargs or {}))

    with _Counting():
        yield counter


@dataclass(frozen=True)
class HeldState:
    """Bytes of training state one rank holds: its weights, gradients and optimizer state
    tensors (its shards only, where they are sharded; Adam's step counters left out)."""

    params_bytes: int
    grads_bytes: int
    optimizer_states_bytes: int

    @property
    def total_bytes(self) -> int:
        return self.params_bytes + self.grads_bytes + self.optimizer_states_bytes


def held_state_bytes(module, optimizer=None) -> HeldState:
    """What ``module``'s parameters, their gradients and ``optimizer``'s per-parameter state
    tensors occupy on this rank, in bytes (a DTensor counts its local shard)."""
    import torch

    def local_bytes(tensor) -> int:
        tensor = tensor.to_local() if hasattr(tensor, "to_local") else tensor
        return tensor.numel() * tensor.element_size()

    if not isinstance(module, torch.nn.Module):
        raise TypeError(f"module must be a torch.nn.Module, got {type(module).__name__}")
    parameters = list(module.parameters())
    states = (
        []
        if optimizer is None
        else [
            value
            for state in optimizer.state.values()
            for value in state.values()
            if isinstance(value, torch.Tensor) and value.dim() > 0
        ]
    )
    return HeldState(
        params_bytes=sum(local_bytes(p) for p in parameters),
        grads_bytes=sum(local_bytes(p.grad) for p in parameters if p.grad is not None),
        optimizer_states_bytes=sum(local_bytes(s) for s in states),
    )
