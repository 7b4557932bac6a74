"""Measured memory: one training step part by part, and a memory budget that makes running out
a lesson rather than a crash. The formulas these are compared with live in
``lab_utils.memory``, which re-exports the names here. torch is imported inside the functions.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass

from lab_utils import checks, torch_compat

__all__ = ["BudgetExceeded", "StepMemory", "budget", "measure_training_step"]


@dataclass(frozen=True)
class StepMemory:
    """Bytes one measured training step held, part by part.

    params_bytes, grads_bytes: the tensors themselves (each storage once);
    optimizer_states_bytes: the optimizer's per-parameter state tensors (Adam's moments),
    zero-dimensional bookkeeping such as Adam's step counts reported apart in
    optimizer_scalars_bytes; activations_bytes: bytes the forward pass and the loss saved for
    backward, each storage once, parameters, buffers and inputs excluded; peak_bytes: the most
    tensor bytes alive at once during the step, parameters included, found by ``peak_method``;
    device: where the step ran.
    """

    params_bytes: int
    grads_bytes: int
    optimizer_states_bytes: int
    optimizer_scalars_bytes: int
    activations_bytes: int
    peak_bytes: int
    device: str
    peak_method: str


def _storage_key(tensor) -> int:
    """An id of the memory behind ``tensor``, shared by all its views (works for fake tensors)."""
    return torch_compat.storage_key(tensor.untyped_storage())


def _storage_bytes(tensors) -> int:
    """Bytes of the distinct storages behind ``tensors``."""
    sizes = {_storage_key(t): t.untyped_storage().nbytes() for t in tensors}
    return sum(sizes.values())


def _live_bytes_mode(limit_bytes=None, device_type=None):
    """A TorchDispatchMode that follows every tensor storage ops create until it is freed.

    It keeps a weak reference to each new storage (weak, so tracking never keeps memory
    alive), sums the live ones after every operation and remembers the largest sum. With
    ``limit_bytes`` it raises :class:`BudgetExceeded` as soon as the sum passes the limit:
    the overshoot is at most one operation's output. Only storages on ``device_type`` count
    (None: all). The approach is that of torch.distributed._tools.mem_tracker, without its
    private API.
    """
    from torch.multiprocessing.reductions import StorageWeakRef

    class LiveBytes(torch_compat.dispatch_mode_base()):
        def __init__(self):
            super().__init__()
            self.storages = {}  # key -> (weak reference, bytes)
            self.current = 0
            self.peak = 0

        def track(self, tensors) -> None:
            new = []
            for tensor in tensors:
                if device_type is None or tensor.device.type == device_type:
                    storage = tensor.untyped_storage()
                    if torch_compat.storage_key(storage) not in self.storages:
                        new.append(storage)
            if not new:  # views and in-place results: the live sum cannot grow
                return
            # Forget released storages, so that the sum is exact at this moment. (A weak
            # reference keeps its storage's address from being reused, so keys stay unique.)
            dead = [key for key, (ref, _) in self.storages.items() if ref.expired()]
            for key in dead:
                self.current -= self.storages.pop(key)[1]
            for storage in new:
                key = torch_compat.storage_key(storage)
                if key not in self.storages:
                    self.storages[key] = (StorageWeakRef(storage), storage.nbytes())
                    self.current += storage.nbytes()
            self.peak = max(self.peak, self.current)
            if limit_bytes is not None and self.current > limit_bytes:
                raise BudgetExceeded(limit_bytes, self.current)

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            out = func(*args, **(kwargs or {}))
            self.track(torch_compat.tensors_in(out))
            return out

    return LiveBytes()


class BudgetExceeded(MemoryError):
    """Raised by :func:`budget` when the live bytes of tensors created in its block pass the budget."""

    def __init__(self, budget_bytes: int, live_bytes: int):
        self.budget_bytes, self.live_bytes = budget_bytes, live_bytes
        super().__init__(
            f"tensors created in this block need {live_bytes:,} bytes; the budget is {budget_bytes:,} bytes"
        )


@contextlib.contextmanager
def budget(limit_bytes, device=None):
    """Run a block as if the device had only ``limit_bytes`` of memory for the tensors the block
    creates.

    On every device (CPU, CUDA, MPS) the storages of tensors created on it inside the block are
    followed from creation to release, and :class:`BudgetExceeded` is raised once their live
    bytes pass the limit (checked after each operation), long before the device runs out.
    Tensors that existed before the block do not count: create the model inside the block for
    it to count. The CPU and a GPU thus count the same thing, what ``lab_utils.memory``
    predicts; a real GPU also holds its CUDA context, cuBLAS workspaces and the caching
    allocator's idle blocks, which the course's reserve stands for. (Capping the allocator
    with ``torch.cuda.set_per_process_memory_fraction`` would count those too, and blocks that
    earlier cells left cached, so its "largest batch that fits" would disagree with the
    prediction.) A CUDA device must have at least ``limit_bytes`` of memory.
    """
    import torch

    from lab_utils import machine

    limit_bytes = checks.count("limit_bytes", limit_bytes)
    device = machine.as_device(device)
    if device.type == "cuda":
        total = torch.cuda.get_device_properties(device).total_memory
        if limit_bytes > total:
            raise ValueError(f"limit_bytes={limit_bytes:,} exceeds the {total:,} bytes of {device}")
    with _live_bytes_mode(limit_bytes, device_type=device.type):
        yield


def _cuda_step_peak(device, step, owned_bytes: int) -> int:
    """Bytes at the peak of ``step()`` on a CUDA device, counting only the step: the most the
    allocator held during the step, less what it held before, plus ``owned_bytes`` (the step's
    own tensors that existed before it)."""
    import torch

    torch.cuda.synchronize(device)
    before = torch.cuda.memory_allocated(device)
    torch.cuda.reset_peak_memory_stats(device)
    step()
    torch.cuda.synchronize(device)
    return torch.cuda.max_memory_allocated(device) - before + owned_bytes


def measure_training_step(model, batch, loss_fn=None, optimizer=None) -> StepMemory:
    """Run one training step of ``model`` on ``batch`` and measure its memory, part by part.

    The step: ``optimizer.zero_grad(set_to_none=True)``; ``output = model(batch)`` (a tuple
    batch is unpacked as positional arguments); ``loss = loss_fn(output)``, by default
    ``output.sum()`` (of the first element of a tuple output); ``loss.backward()``;
    ``optimizer.step()``, by default ``torch.optim.AdamW(model.parameters())``.

    Activations are what the forward pass and the loss save for backward, counted with
    ``torch.autograd.graph.saved_tensors_hooks``, each storage once, leaving out parameters,
    buffers and inputs (saving them costs no new memory). The peak counts the step's own
    tensors: the parameters, buffers, inputs and optimizer state that exist before the step,
    plus the most that the step adds at once. On CUDA the addition is
    ``torch.cuda.max_memory_allocated`` minus ``memory_allocated`` before the step (so tensors
    that earlier cells keep on the device do not count; the allocator's rounding to 512 bytes
    does, and so does a cuBLAS workspace that the step's first product allocates); elsewhere
    the peak is found by following every tensor storage from creation to release (see
    ``_live_bytes_mode``).
    """
    import torch

    if not isinstance(model, torch.nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    inputs = batch if isinstance(batch, tuple) else (batch,)
    if not inputs or not all(isinstance(t, torch.Tensor) for t in inputs):
        raise TypeError(f"batch must be a tensor or a tuple of tensors, got {type(batch).__name__}")
    if loss_fn is not None and not callable(loss_fn):
        raise TypeError(f"loss_fn must be None or callable, got {type(loss_fn).__name__}")
    parameters = list(model.parameters())
    if not parameters:
        raise ValueError("model has no parameters to train")
    if optimizer is None:
        optimizer = torch.optim.AdamW(parameters)
    elif not (callable(getattr(optimizer, "step", None)) and callable(getattr(optimizer, "zero_grad", None))):
        raise TypeError(f"optimizer must have step() and zero_grad(), got {type(optimizer).__name__}")
    device = parameters[0].device

    optimizer.zero_grad(set_to_none=True)
    free_to_save = {_storage_key(t) for t in (*parameters, *model.buffers(), *inputs)}
    saved = {}

    def pack(tensor):
        key = _storage_key(tensor)
        if key not in free_to_save:
            saved[key] = tensor.untyped_storage().nbytes()
        return tensor

    def step():
        with torch.autograd.graph.saved_tensors_hooks(pack, lambda tensor: tensor):
            output = model(*inputs)
            first = output[0] if isinstance(output, (tuple, list)) else output
            loss = first.sum() if loss_fn is None else loss_fn(output)
        del output, first  # as in a training loop: only what backward saved stays alive
        loss.backward()
        optimizer.step()

    if device.type == "cuda":
        owned = [
            *parameters,
            *model.buffers(),
            *inputs,
            *torch_compat.tensors_in(list(optimizer.state.values())),
        ]
        peak = _cuda_step_peak(device, step, _storage_bytes([t for t in owned if t.device == device]))
        method = (
            "torch.cuda.max_memory_allocated during the step - memory_allocated before "
            "+ the step's own tensors"
        )
    else:
        tracker = _live_bytes_mode(device_type=device.type)
        with tracker:
            tracker.track(
                [
                    *parameters,
                    *model.buffers(),
                    *inputs,
                    *torch_compat.tensors_in(list(optimizer.state.values())),
                ]
            )
            step()
        peak, method = tracker.peak, "tracked tensor lifetimes"

    grads = [p.grad for p in parameters if p.grad is not None]
    state = torch_compat.tensors_in([optimizer.state[p] for p in parameters if p in optimizer.state])
    return StepMemory(
        params_bytes=_storage_bytes(parameters),
        grads_bytes=_storage_bytes(grads),
        optimizer_states_bytes=_storage_bytes([t for t in state if t.dim() > 0]),
        optimizer_scalars_bytes=_storage_bytes([t for t in state if t.dim() == 0]),
        activations_bytes=sum(saved.values()),
        peak_bytes=int(peak),
        device=str(device),
        peak_method=method,
    )
