"""lab_utils.batching: the tiny GPT's continuous-batching loop (measuring: torch and the clock).
The decode of sequences of different lengths in one call is checked against the model's own
cached decode; timings are not asserted."""

import pytest
import torch

from lab_utils import batching, machine, models, replica


@pytest.fixture(scope="module")
def tiny():
    torch.manual_seed(0)
    return models.TinyGPT(models.GPTConfig(seq_len=32)).eval()


def test_one_batched_decode_equals_each_sequence_decoded_alone(tiny):
    device = torch.device("cpu")
    slots = batching._Slots(tiny, 3, device)
    lengths, tokens, expected = [5, 9, 2], [], []
    with torch.no_grad():
        for slot, length in enumerate(lengths):
            logits, cache = tiny.prefill(torch.randint(0, 256, (1, length)))
            slots.fill(slot, cache)
            token = logits.argmax(dim=-1, keepdim=True)
            tokens.append(token)
            expected.append(tiny.decode(token, cache)[0].argmax(dim=-1).item())
        following = batching._decode(
            tiny, torch.cat(tokens), slots, torch.tensor([0, 1, 2]), torch.tensor(lengths)
        )
    assert following.flatten().tolist() == expected


def test_serve_times_every_request_as_a_client_sees_it(tiny):
    requests = [(0.0, 4, 3), (0.0, 6, 1), (0.01, 5, 4)]
    result = batching.serve(tiny, requests, device="cpu", max_num_seqs=2)
    assert isinstance(result, replica.ReplicaResult) and result.engine == "measured here"
    assert [r.arrival_s for r in result.requests] == [0.0, 0.0, 0.01]
    for r in result.requests:
        assert 0 <= r.queue_s <= r.ttft_s <= r.e2e_s
    assert result.requests[1].tpot_s == 0.0  # one output token: no TPOT
    with pytest.raises(ValueError, match="seq_len"):
        batching.serve(tiny, [(0.0, 30, 10)], device="cpu")


def test_the_measured_engine_and_this_machine_feed_the_simulator(tiny):
    steps = batching.step_times_s(tiny, prompt_tokens=4, batches=(1, 2), context=8, repeats=2, device="cpu")
    assert set(steps) == {"prefill", 1, 2} and all(s > 0 for s in steps.values())
    engine = batching.measured_engine(steps)
    here = batching.this_machine("cpu", min_run_time=0.01)
    result = replica.simulate(
        models.llm_config(tiny.config),
        device=here,
        requests=[(0.0, 4, 3)],
        engine=engine,
        weight_bytes_per_param=4.0,
        kv_bytes_per_value=4,
        kv_cache_tokens=1000,
        usd_per_hour=0.0,
    )
    assert result.requests[0].e2e_s >= 3 * engine.per_step_s  # a prefill step and two decode steps


@pytest.mark.skipif(not machine.pick_device().type == "cuda", reason="needs a CUDA GPU")
def test_serve_on_the_gpu(tiny):
    result = batching.serve(tiny, [(0.0, 4, 3), (0.0, 6, 2)], device="cuda", max_num_seqs=2)
    assert len(result.requests) == 2 and result.device.startswith("cuda")
