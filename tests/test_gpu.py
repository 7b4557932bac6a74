"""Checks that need a CUDA GPU: run them on the GPU machine with `pytest -m gpu tests/test_gpu.py`.

Skipped without CUDA. They check what the CPU cannot show: synchronised timing of asynchronous
kernels, the CUDA memory peak against the estimate, and recovery from an out-of-memory error.
"""

import time

import pytest
import torch

from lab_utils import machine, memory, models, timing

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")]


def test_measure_waits_for_the_gpu():
    a = torch.randn(8192, 8192, device="cuda")
    a @ a
    machine.synchronize("cuda")
    started_s = time.perf_counter()
    a @ a
    launch_s = time.perf_counter() - started_s  # without waiting: the launch only
    machine.synchronize("cuda")
    measured_s = timing.measure(lambda: a @ a, device="cuda").median_s
    assert measured_s > 3 * launch_s  # 2·8192³ FLOPs take milliseconds; a launch microseconds


def test_cuda_training_step_memory_matches_the_estimate():
    config = models.GPTConfig(seq_len=128, n_layers=4, hidden=256, n_heads=4)
    torch.manual_seed(0)
    model = models.TinyGPT(config).cuda()
    measured = memory.measure_training_step(model, models.random_tokens(config, 16).cuda())
    state = memory.training_state_bytes(config.n_params, precision="fp32", optimizer="adamw")
    assert measured.params == state.params and measured.grads == state.grads
    assert measured.optimizer_states == state.optimizer_states
    assert measured.activations == pytest.approx(memory.tiny_gpt_activation_bytes(config, 16), rel=0.15)
    assert measured.peak >= measured.params + measured.grads


def test_out_of_memory_is_caught_and_the_device_recovers():
    total = torch.cuda.get_device_properties(0).total_memory
    with pytest.raises(torch.cuda.OutOfMemoryError):
        torch.empty(2 * total, dtype=torch.uint8, device="cuda")
    torch.cuda.empty_cache()
    assert torch.ones(1024, device="cuda").sum().item() == 1024
