"""The few private PyTorch APIs the course relies on, behind one small module.

PyTorch may move or rename these between releases; each has a public fallback or a clear error
here, and ``tests/test_torch_compat.py`` checks them on the installed torch. torch is imported
lazily, inside each function.
"""

from __future__ import annotations

__all__ = ["dispatch_mode_base", "process_group_size", "storage_key", "tensors_in"]


def storage_key(storage) -> int:
    """An integer that identifies one untyped storage (the memory behind a tensor and all its
    views) while it is alive: its C handle (``_cdata``), else its data pointer."""
    key = getattr(storage, "_cdata", None)
    return key if key is not None else storage.data_ptr()


def tensors_in(value) -> list:
    """Every tensor inside a nested structure of tuples, lists and dicts (what an operator
    returns, an optimizer's state), via torch's pytree utilities."""
    import torch

    try:
        from torch.utils._pytree import tree_leaves
    except ImportError:  # pragma: no cover - older or newer torch without it
        from torch.utils._pytree import tree_flatten

        def tree_leaves(tree):
            return tree_flatten(tree)[0]

    return [leaf for leaf in tree_leaves(value) if isinstance(leaf, torch.Tensor)]


def dispatch_mode_base():
    """The base class of a mode that sees every operator call (``TorchDispatchMode``)."""
    try:
        from torch.utils._python_dispatch import TorchDispatchMode
    except ImportError as error:  # pragma: no cover
        raise RuntimeError(
            "this torch has no TorchDispatchMode; the course's memory tracker needs torch >= 2.0"
        ) from error
    return TorchDispatchMode


def process_group_size(group_name: str) -> int:
    """The number of ranks of the process group registered as ``group_name`` (the name a
    functional collective, such as DTensor's all-reduce, carries instead of the group)."""
    from torch.distributed import distributed_c10d

    resolve = getattr(distributed_c10d, "_resolve_process_group", None)
    if resolve is None:  # pragma: no cover - a torch that moved it
        raise RuntimeError("this torch cannot resolve a process group by name; count_collectives needs it")
    return resolve(group_name).size()
