"""lab_utils.replica_steps and the scheduler's decode-only runs: what makes a simulation fast must
not change what it answers. The goldens below were produced by main's code at commit 72150fb,
before the runs of decode-only steps were taken in one loop and the step times kept across
simulations (scripts/replica_identical.py compares 89 jobs, the advisor's answers and
``lab-utils latency`` the same way). The "bound" engine keeps them to the catalogs' specs."""

import pytest

from lab_utils import replica, replica_steps

BOUND = dict(engine="bound", usd_per_hour=0.0)
RUNS = {
    "a cache that preempts": (
        replica.at_rate,
        dict(model="Qwen2.5-1.5B", device="T4", rate_per_s=8.0, prompt_len=300, output_len=300),
        dict(n_requests=60, kv_cache_tokens=6000, max_num_seqs=16, max_num_batched_tokens=2048),
        (
            1543,
            35,
            "0x1.e2f1a85b3994ap+0",
            "0x1.22e217589fe69p+3",
            "0x1.64f16d3898346p-7",
            "0x1.59689315c88a6p+2",
        ),
    ),
    "a draft model, a closed loop": (
        replica.at_concurrency,
        dict(model="Llama-3.1-8B", device="H100 SXM", concurrency=6, prompt_len=400, output_len=120),
        dict(n_requests=30, spec_tokens=4, spec_acceptance=0.75, spec_draft_model="Llama-3.2-1B"),
        (205, 0, "0x1.415bf84135608p-5", "0x1.6e4857a0bd863p-2", "0x1.5ec6d376f4020p-9", "0x0.0p+0"),
    ),
    "whole prompts, a prefix hit, sliding windows": (
        replica.at_rate,
        dict(model="Gemma-3-27B", device="H100 SXM", rate_per_s=3.0, prompt_len=3000, output_len=80),
        dict(n_requests=40, chunked_prefill=False, prefix_hit=0.5),
        (
            843,
            0,
            "0x1.7e3164a36f120p-4",
            "0x1.0e24881c9bc7bp+1",
            "0x1.620492a97da94p-6",
            "0x1.da92b12915f34p-7",
        ),
    ),
}


def _run(name):
    run, job, levers, _ = RUNS[name]
    job = dict(job)
    return run(job.pop("model"), **job, **levers, **BOUND)


@pytest.mark.parametrize("name", list(RUNS))
def test_the_simulation_answers_as_main_did_to_the_last_bit(name):
    result = _run(name)
    found = (result.steps, result.preemptions, *(p.hex() for p in _figures(result)))
    assert found == RUNS[name][3]


def _figures(result):
    return result.ttft.p50, result.e2e.p99, result.tpot.p50, result.queue.p90


def test_step_times_kept_from_other_simulations_change_nothing(monkeypatch):
    """A job simulated with its steps kept from earlier runs (of it and of others) answers as
    one simulated afresh: every request's times, the steps and the engine's notes."""
    monkeypatch.setattr(replica_steps, "_JOBS", type(replica_steps._JOBS)())
    monkeypatch.setattr(replica_steps.Job, "held", 0)
    first = replica.at_rate(
        "Llama-3.1-8B", device="L4", rate_per_s=2.0, prompt_len=800, output_len=150, n_requests=40
    )
    _run("a cache that preempts")
    again = replica.at_rate(
        "Llama-3.1-8B", device="L4", rate_per_s=2.0, prompt_len=800, output_len=150, n_requests=40
    )
    assert again == first and first.notes


def test_the_jobs_kept_are_bounded(monkeypatch):
    """The last _JOBS_KEPT jobs are kept, and Job.held counts the steps they hold."""
    monkeypatch.setattr(replica_steps, "_JOBS", type(replica_steps._JOBS)())
    monkeypatch.setattr(replica_steps.Job, "held", 0)
    monkeypatch.setattr(replica_steps, "_JOBS_KEPT", 2)
    for device in ("H100 SXM", "L4", "T4"):
        replica.at_rate(
            "Qwen2.5-0.5B", device=device, rate_per_s=1.0, prompt_len=100, output_len=50, n_requests=5
        )
    kept = list(replica_steps._JOBS.values())
    assert [job.spec.name for job in kept] == ["L4", "T4"]
    assert replica_steps.Job.held == sum(len(job.steps) for job in kept) > 0
