"""memory_measure on CUDA without a GPU (issue 18, items 3 and 4): torch.cuda's counters are
replaced by a small fake allocator, so the arithmetic is checked by hand."""

import types

import pytest
import torch

from lab_utils import memory_measure

MB = 10**6


class FakeAllocator:
    """torch.cuda's allocated/peak counters over bytes that a test allocates and frees."""

    def __init__(self, allocated):
        self.allocated = self.peak_bytes = allocated

    def allocate(self, n_bytes):
        self.allocated += n_bytes
        self.peak_bytes = max(self.peak_bytes, self.allocated)

    def patch(self, monkeypatch):
        monkeypatch.setattr(torch.cuda, "synchronize", lambda device=None: None)
        monkeypatch.setattr(torch.cuda, "memory_allocated", lambda device=None: self.allocated)
        monkeypatch.setattr(torch.cuda, "max_memory_allocated", lambda device=None: self.peak_bytes)
        monkeypatch.setattr(
            torch.cuda, "reset_peak_memory_stats", lambda device=None: setattr(self, "peak", self.allocated)
        )


def test_a_cuda_step_peak_leaves_out_what_earlier_cells_hold(monkeypatch):
    allocator = FakeAllocator(allocated=1000 * MB)  # earlier cells' models and optimizer states
    allocator.patch(monkeypatch)

    def step():  # activations 300 MB, 100 MB of them freed, then 50 MB more
        allocator.allocate(300 * MB)
        allocator.allocate(-100 * MB)
        allocator.allocate(50 * MB)

    peak = memory_measure._cuda_step_peak(torch.device("cuda"), step, owned_bytes=40 * MB)
    assert peak == 300 * MB + 40 * MB  # the step's highest addition plus its own tensors, not 1,340 MB


def test_a_cuda_budget_counts_tensors_not_the_allocator_cap(monkeypatch):
    """Item 3: the budget no longer caps the caching allocator (whose reserved memory holds idle
    blocks); it follows tensors as on the CPU."""
    properties = types.SimpleNamespace(total_memory=16 * 10**9)
    monkeypatch.setattr(torch.cuda, "get_device_properties", lambda device=None: properties)

    def no_cap(*args, **kwargs):
        raise AssertionError("budget must not cap the caching allocator")

    monkeypatch.setattr(torch.cuda, "set_per_process_memory_fraction", no_cap)
    with memory_measure.budget(10 * MB, device="cuda"):
        torch.zeros(4 * MB)  # a CPU tensor: not on the budgeted device
    with pytest.raises(ValueError, match="limit_bytes"):
        with memory_measure.budget(17 * 10**9, device="cuda"):
            pass


def test_what_existed_before_the_budget_stays_outside_it():
    held = torch.zeros(8 * MB // 4)  # 8 MB that an earlier cell keeps alive
    with memory_measure.budget(4 * MB, device="cpu"):
        kept = torch.zeros(3 * MB // 4)
        with pytest.raises(memory_measure.BudgetExceeded) as caught:
            torch.zeros(2 * MB // 4)
    assert caught.value.budget_bytes == 4 * MB
    assert caught.value.live_bytes == 5 * MB  # 3 + 2 MB created inside; the 8 MB held before do not count
    del held, kept
