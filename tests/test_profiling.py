"""lab_utils.profiling: profiler categories, the CPU-bound dataset, the loader timer, sizes.

Times are only checked for being consistent (parts add up), never for one thing being faster.
"""

import pickle
from types import SimpleNamespace

import numpy as np
import pytest
import torch

from lab_utils import profiling


@pytest.mark.parametrize(
    "name, category",
    [
        ("aten::addmm", "matmul"),
        ("aten::mm", "matmul"),
        ("aten::bmm", "matmul"),
        ("quantized::linear_dynamic", "matmul"),
        ("aten::gelu_backward", "elementwise"),
        ("aten::native_layer_norm_backward", "elementwise"),
        ("aten::_softmax", "elementwise"),
        ("aten::add_", "elementwise"),
        ("aten::_log_softmax_backward_data", "elementwise"),
        ("Optimizer.step#AdamW.step", "optimizer"),
        ("Optimizer.zero_grad#AdamW.zero_grad", "optimizer"),
        ("aten::_foreach_mul_", "optimizer"),
        ("aten::_fused_adamw_", "optimizer"),
        ("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", "data"),
        ("data", "data"),
        ("aten::view", "other"),
        ("aten::embedding", "other"),
        ("autograd::engine::evaluate_function: AddmmBackward0", "other"),
    ],
)
def test_categorize(name, category):
    assert profiling.categorize(name) == category


def test_op_stem_strips_namespace_and_backward():
    assert profiling.op_stem("aten::native_layer_norm_backward") == "native_layer_norm"
    assert profiling.op_stem("aten::add_") == "add"
    with pytest.raises(TypeError, match="name"):
        profiling.op_stem(3)


def fake(key, self_us, count=1, device_us=0.0):
    return SimpleNamespace(
        key=key, self_cpu_time_total=self_us, self_device_time_total=device_us, count=count
    )


def test_group_profile_adds_self_times_by_category():
    events = [
        fake("aten::addmm", 600, 4),
        fake("aten::gelu", 200),
        fake("Optimizer.step#AdamW.step", 150),
        fake("aten::view", 50),
        fake("aten::empty", 0),
    ]
    breakdown = profiling.group_profile(events)
    assert breakdown.total_s == pytest.approx(1e-3)
    assert breakdown.share("matmul") == pytest.approx(0.6)
    assert breakdown.share("data") == 0.0
    assert [op.name for op in breakdown.ops] == [
        "aten::addmm",
        "aten::gelu",
        "Optimizer.step#AdamW.step",
        "aten::view",
    ]
    assert breakdown.ops[0].calls == 4
    assert breakdown.top_share(2) == pytest.approx(0.8)
    assert sum(breakdown.share(c) for c in profiling.CATEGORIES) == pytest.approx(1.0)


def test_operators_inside_a_labelled_range_count_for_it():
    step = SimpleNamespace(key="Optimizer.step#AdamW.step", self_cpu_time_total=10, count=1, cpu_parent=None)
    inner = SimpleNamespace(key="aten::mul_", self_cpu_time_total=90, count=1, cpu_parent=step)
    loose = SimpleNamespace(key="aten::mul_", self_cpu_time_total=100, count=1, cpu_parent=None)
    breakdown = profiling.group_profile([step, inner, loose])
    assert breakdown.share("optimizer") == pytest.approx(0.5) and breakdown.share(
        "elementwise"
    ) == pytest.approx(0.5)
    assert {(op.name, op.category) for op in breakdown.ops} == {
        ("aten::mul_", "optimizer"),
        ("aten::mul_", "elementwise"),
        ("Optimizer.step#AdamW.step", "optimizer"),
    }


def test_group_profile_device_clock_and_empty_profile():
    breakdown = profiling.group_profile(
        [fake("aten::mm", 900, device_us=300), fake("aten::view", 5)], clock="device"
    )
    assert breakdown.total_s == pytest.approx(3e-4) and breakdown.share("matmul") == 1.0
    empty = profiling.group_profile([])
    assert empty.total_s == 0 and empty.share("matmul") == 0 and empty.top_share() == 0


def test_group_profile_refuses_bad_input():
    with pytest.raises(ValueError, match="clock"):
        profiling.group_profile([], clock="wall")
    with pytest.raises(TypeError, match="events"):
        profiling.group_profile("aten::mm")
    with pytest.raises(ValueError, match="category"):
        profiling.group_profile([]).share("matmuls")
    with pytest.raises(ValueError, match="ProfilerActivity.CUDA"):
        profiling.group_profile([SimpleNamespace(key="x", self_cpu_time_total=1, count=1)], clock="device")


def test_group_profile_on_a_real_cpu_profile():
    model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.GELU(), torch.nn.Linear(64, 1))
    optimizer = torch.optim.AdamW(model.parameters())
    x = torch.randn(16, 32)
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        for _ in range(2):
            optimizer.zero_grad()
            model(x).square().mean().backward()
            optimizer.step()
    for events in (prof.events(), prof.key_averages()):
        breakdown = profiling.group_profile(events)
        assert (
            breakdown.share("matmul") > 0
            and breakdown.share("optimizer") > 0
            and breakdown.share("elementwise") > 0
        )
    assert profiling.group_profile(prof.events()).total_s == pytest.approx(breakdown.total_s)


def test_state_dict_bytes_counts_the_weights():
    layer = torch.nn.Linear(100, 100)
    assert profiling.state_dict_bytes(layer) >= (100 * 100 + 100) * 4
    with pytest.raises(TypeError, match="model"):
        profiling.state_dict_bytes("model.pt")


def test_dataset_items_are_deterministic_and_picklable():
    dataset = profiling.DecodeAugmentDataset(n_items=8, side=16, work=2, seed=3)
    image, label = dataset[5]
    assert image.shape == (3, 16, 16) and image.dtype == np.float32 and label == 5
    assert np.array_equal(image, dataset[5][0]) and np.array_equal(dataset[-3][0], image)
    assert np.allclose(image.mean(axis=(1, 2)), 0, atol=1e-5)
    clone = pickle.loads(pickle.dumps(dataset))  # what a spawned DataLoader worker receives
    assert np.array_equal(clone[5][0], image)
    with pytest.raises(IndexError):
        dataset[8]


@pytest.mark.parametrize(
    "kwargs, name",
    [({"n_items": 0}, "n_items"), ({"side": 1}, "side"), ({"work": -1}, "work"), ({"seed": 1.5}, "seed")],
)
def test_dataset_refuses_bad_arguments(kwargs, name):
    with pytest.raises((TypeError, ValueError), match=name):
        profiling.DecodeAugmentDataset(**kwargs)


def test_time_loader_splits_wait_and_compute():
    dataset = profiling.DecodeAugmentDataset(n_items=12, side=8, work=1)
    loader = torch.utils.data.DataLoader(dataset, batch_size=2, num_workers=0)
    seen = []
    run = profiling.time_loader(loader, lambda batch: seen.append(batch[0].shape), device="cpu")
    assert run.batches == 5 and len(seen) == 6 and seen[0] == (2, 3, 8, 8)
    assert run.num_workers == 0 and run.first_batch_s > 0
    assert run.total_s == pytest.approx(run.wait_s + run.compute_s)
    assert run.step_s == pytest.approx(run.total_s / 5) and 0 <= run.wait_fraction <= 1
    assert profiling.time_loader(loader, lambda batch: None, max_batches=2, device="cpu").batches == 2


def test_time_loader_with_a_worker_process():
    loader = torch.utils.data.DataLoader(
        profiling.DecodeAugmentDataset(n_items=6, side=8, work=1), batch_size=2, num_workers=1
    )
    run = profiling.time_loader(loader, lambda batch: None, device="cpu")
    assert run.num_workers == 1 and run.batches == 2


def test_time_loader_refuses_bad_input():
    with pytest.raises(TypeError, match="step"):
        profiling.time_loader([1, 2], "step", device="cpu")
    with pytest.raises(ValueError, match="max_batches"):
        profiling.time_loader([1, 2], print, max_batches=0, device="cpu")
    with pytest.raises(ValueError, match="no batch"):
        profiling.time_loader([], print, device="cpu")
    with pytest.raises(ValueError, match="only one batch"):
        profiling.time_loader([1], lambda batch: None, device="cpu")
