"""lab_utils.torch_compat: the private PyTorch APIs the course relies on still work on this torch."""

import pytest

torch = pytest.importorskip("torch")

from lab_utils import torch_compat  # noqa: E402


def test_a_tensor_and_its_view_share_one_storage_key():
    base = torch.zeros(4, 4)
    view = base[1:, ::2]
    assert torch_compat.storage_key(view.untyped_storage()) == torch_compat.storage_key(
        base.untyped_storage()
    )


def test_two_tensors_have_different_storage_keys():
    a, b = torch.zeros(4), torch.zeros(4)
    assert torch_compat.storage_key(a.untyped_storage()) != torch_compat.storage_key(b.untyped_storage())


def test_tensors_in_finds_every_tensor_in_nested_containers_and_nothing_else():
    a, b, c = torch.ones(1), torch.ones(2), torch.ones(3)
    nested = {"x": [a, 1, "text", (b, None, {"deep": c})], "y": 2.5}
    found = torch_compat.tensors_in(nested)
    assert len(found) == 3 and {id(t) for t in found} == {id(a), id(b), id(c)}
    assert torch_compat.tensors_in({"no": [1, 2.0, "tensors"]}) == []
    assert torch_compat.tensors_in(a) == [a]


def test_a_dispatch_mode_sees_the_operators_called_inside_it():
    class Count(torch_compat.dispatch_mode_base()):
        def __init__(self):
            super().__init__()
            self.ops = []

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            self.ops.append(func)
            return func(*args, **(kwargs or {}))

    x, y = torch.ones(3), torch.full((3,), 2.0)
    with Count() as mode:
        z = torch.add(x, y)
    assert z.tolist() == [3.0, 3.0, 3.0]  # the mode passes the call through unchanged
    assert sum(op.overloadpacket is torch.ops.aten.add for op in mode.ops) == 1  # one torch.add, seen once
