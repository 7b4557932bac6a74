"""lab_utils.splits (DP, FSDP, TP, PP formulas and the cluster plan), and the four splits run for
real: lab_utils/data/scripts/split_train.py on two gloo ranks, checked against the one-process
model and against the formulas."""

from __future__ import annotations

import json
import math

import pytest

from lab_utils import comms, course_files, memory, splits

# --- formulas ------------------------------------------------------------------------------------


def test_bubble_is_gpipes():
    assert splits.bubble_fraction(stages=2, microbatches=4) == pytest.approx(1 / 5)
    assert splits.bubble_fraction(stages=4, microbatches=1) == pytest.approx(3 / 4)
    assert splits.bubble_fraction(stages=1, microbatches=8) == 0


def test_dp_and_fsdp_follow_zero():
    n_params, ranks = 7e9, 8
    dp, fsdp = splits.data_parallel(n_params, ranks), splits.fully_sharded(n_params, ranks)
    assert dp.state_bytes_per_rank == memory.training_state_bytes(n_params).total_bytes == 16 * n_params
    assert fsdp.state_bytes_per_rank == pytest.approx(16 * n_params / ranks)
    # ZeRO's Ψ accounting in bytes of bf16 values: DP 2Ψ, ZeRO-3 3Ψ, both times (N-1)/N
    assert dp.bytes_per_step == pytest.approx(comms.ring_all_reduce_bytes(2 * n_params, ranks))
    assert fsdp.bytes_per_step == pytest.approx(1.5 * dp.bytes_per_step)
    kept = splits.fully_sharded(n_params, ranks, kept_params=n_params / 10, microbatches=2)
    assert kept.bytes_per_step == pytest.approx(
        (ranks - 1) / ranks * (2 * (2 - 0.1) * 2 * n_params + 2 * n_params)
    )


def test_tp_and_pp_bytes():
    tp = splits.tensor_parallel(1e9, 4, n_layers=10, batch=2, seq_len=1024, hidden=2048)
    activation = 2 * 1024 * 2048 * 2
    assert tp.bytes_per_step == pytest.approx(4 * 10 * 2 * 3 / 4 * activation)
    assert tp.state_bytes_per_rank == pytest.approx(16 * 1e9 / 4)
    pp = splits.pipeline_parallel(1e8, 4, batch=2, seq_len=1024, hidden=2048, microbatches=8)
    assert pp.bytes_per_step == 2 * activation and pp.bubble_fraction == pytest.approx(3 / 11)
    assert (
        splits.pipeline_parallel(1e8, 2, batch=2, seq_len=1024, hidden=2048, microbatches=8).bytes_per_step
        == activation
    )


def test_cluster_plan_for_llama_70b_on_h100_nodes():
    plan = splits.cluster_plan("llama-3.1-70b", "h100", 8, 4)
    rows = {row.layout: row for row in plan.rows}
    assert not rows["DP x32"].fits  # 16 bytes per parameter: over a terabyte per GPU
    combined = rows["TP x8 + FSDP x4"]
    assert combined.inside_node == "TP" and combined.across_nodes == "FSDP" and combined.fits
    # TP's traffic stays on NVLink; what crosses the network is FSDP of the node's 1/8 shard
    assert combined.network_bytes_per_step < rows["FSDP x32"].network_bytes_per_step / 8
    assert combined.communication_s < min(rows[name].communication_s for name in ("FSDP x32", "TP x32"))
    assert rows["TP x8 + PP x4"].bubble_fraction == pytest.approx(
        splits.bubble_fraction(4, plan.microbatches)
    )
    assert dict(plan.assumptions)["inter_node_bytes_per_s"] == plan.network_bytes_per_s
    json.dumps(plan.to_dict())


@pytest.mark.parametrize(
    "call, error, match",
    [
        (lambda: splits.bubble_fraction(0, 4), ValueError, "stages=0"),
        (lambda: splits.data_parallel(1e9, 0), ValueError, "n_ranks=0"),
        (lambda: splits.fully_sharded(1e9, 2, kept_params=2e9), ValueError, "kept_params"),
        (
            lambda: splits.tensor_parallel(
                1e9, 2, n_layers=2, batch=1, seq_len=8, hidden=8, precision="int4"
            ),
            ValueError,
            "precision",
        ),
        (
            lambda: splits.pipeline_parallel(1e9, 1, batch=1, seq_len=8, hidden=8, microbatches=2),
            ValueError,
            "stages=1",
        ),
        (lambda: splits.cluster_plan("llama-3.1-70b", "epyc-9684x"), ValueError, "GPU"),
        (lambda: splits.cluster_plan(70e9, "h100"), TypeError, "model"),
    ],
)
def test_bad_inputs_are_named(call, error, match):
    with pytest.raises(error, match=match):
        call()


# --- the four splits, run on two gloo ranks ------------------------------------------------------

LOSS_ATOL = 1e-4
"""Losses of a split against the one-process model: fp32 sums in another order differ by ~1e-6."""


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    from lab_utils import distributed

    out = tmp_path_factory.mktemp("splits") / "result.json"
    result = distributed.run_torchrun(
        course_files.path("scripts/split_train.py"), ["--out", str(out)], nproc_per_node=2, timeout_s=180
    )
    assert result.leftover_pids == ()
    data = json.loads(out.read_text())
    config = data["config"]
    formulas = splits.tiny_gpt_splits(
        data["world"],
        vocab_size=config["vocab_size"],
        seq_len=config["seq_len"],
        hidden=config["hidden"],
        n_layers=config["n_layers"],
        batch=data["batch"],
        microbatches=data["microbatches"],
    )
    return data, formulas


@pytest.mark.slow
@pytest.mark.parametrize("split", splits.SPLITS)
def test_split_computes_what_one_process_computes(run, split):
    data, _ = run
    assert data["splits"][split]["losses"] == pytest.approx(data["reference_losses"], abs=LOSS_ATOL, rel=0)
    assert len(set(data["reference_losses"])) == len(data["reference_losses"])  # training moved the weights


@pytest.mark.slow
@pytest.mark.parametrize("split", splits.SPLITS)
def test_split_memory_and_bytes_match_the_formulas(run, split):
    data, formulas = run
    formula = formulas[split]
    ranks = data["splits"][split]["ranks"]
    # the pipeline's formula is its largest stage; every other split holds the same on each rank
    assert max(rank["state_bytes"] for rank in ranks) == pytest.approx(formula.state_bytes_per_rank, rel=0.10)
    assert max(rank["sent_bytes"] for rank in ranks) == pytest.approx(formula.bytes_per_step, rel=0.10)
    assert all(rank["sent_bytes"] > 0 for rank in ranks)


@pytest.mark.slow
def test_the_pipeline_reports_its_idle_share_and_gpipes_formula(run):
    """The run reports the share of the step a stage waited (a fraction) beside GPipe's formula.
    How close the two come is a timing, shown in notebook 10, not asserted here: under load the
    measured share was 0.57 against the formula's 0.20 (make test, 2026-12-04)."""
    data, formulas = run
    measured = data["splits"]["pp"]["bubble"]
    expected = formulas["pp"].bubble_fraction
    assert 0.0 <= measured < 1.0, measured
    assert math.isclose(expected, 1 / (data["microbatches"] + 1))


# --- the command line ----------------------------------------------------------------------------


def test_cli_split_prints_the_plan_and_its_assumptions(capsys):
    from lab_utils import cli

    assert (
        cli.main(
            ["split", "--model", "llama-3.1-70b", "--gpu", "h100", "--gpus-per-node", "8", "--nodes", "4"]
        )
        == 0
    )
    out = capsys.readouterr().out
    plan = splits.cluster_plan("llama-3.1-70b", "h100", 8, 4)
    for row in plan.rows:
        assert row.layout in out
    assert "inter_node_bytes_per_s = " in out and "[--network-gbytes-per-s]" in out
    assert "pipeline_microbatches = 8" in out and "[--microbatches]" in out


def test_cli_split_json_is_the_calculators_answer(capsys):
    from lab_utils import cli

    assert (
        cli.main(
            [
                "split",
                "--model",
                "llama-3.1-70b",
                "--gpu",
                "h100",
                "--nodes",
                "2",
                "--microbatches",
                "16",
                "--network-gbytes-per-s",
                "25",
                "--json",
            ]
        )
        == 0
    )
    data = json.loads(capsys.readouterr().out)
    plan = splits.cluster_plan("llama-3.1-70b", "h100", None, 2, microbatches=16, network_bytes_per_s=25e9)
    estimate = memory.job_estimate("llama-3.1-70b", "full", batch=plan.batch, seq_len=plan.seq_len)
    held = memory.gpus_to_hold("llama-3.1-70b", estimate, "H100 SXM")  # the whole job's count, as memory's
    assert data == json.loads(json.dumps({**plan.to_dict(), "gpus_to_hold": held}))
    assert "inter_node_bytes_per_s" not in dict(plan.assumptions)


@pytest.mark.parametrize(
    "argv",
    [
        ["split", "--model", "llama-3.1-70b", "--gpu", "epyc"],
        ["split", "--model", "llama-3.1-70b", "--gpu", "h100", "--nodes", "0"],
        ["split", "--gpu", "h100"],
    ],
)
def test_cli_split_bad_input_exits_2(argv, capsys):
    from lab_utils import cli

    with pytest.raises(SystemExit) as raised:
        cli.main(argv)
    assert raised.value.code == 2
    assert len(capsys.readouterr().err.strip().splitlines()) == 1


# --- the counter, in this process (a group of one rank) ------------------------------------------


def test_count_collectives_sees_calls_and_sizes_them():
    import torch
    import torch.distributed as dist

    from lab_utils import distributed, torch_compat

    assert not dist.is_initialized()
    dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
    try:
        values = torch.ones(1000)
        gathered = torch.empty(1000)
        with distributed.count_collectives() as counter:
            dist.all_reduce(values)
            dist.all_gather_single(gathered, values)
            values.add_(1)  # not a collective: not counted
        assert [(call.op, call.n_ranks, call.message_bytes) for call in counter.calls] == [
            ("allreduce", 1, 4000),
            ("allgather_base", 1, 4000),
        ]
        assert counter.sent_bytes == 0  # one rank sends nothing: 2(N-1)/N and (N-1)/N are 0
        assert counter.by_op()["allreduce"] == {"calls": 1, "message_bytes": 4000, "sent_bytes": 0.0}
        assert torch_compat.process_group_size(dist.group.WORLD.group_name) == 1
        model = torch.nn.Linear(10, 10)
        optimizer = torch.optim.AdamW(model.parameters())
        model(torch.ones(2, 10)).sum().backward()
        optimizer.step()
        held = distributed.held_state_bytes(model, optimizer)
        assert (held.params_bytes, held.grads_bytes, held.optimizer_states_bytes) == (440, 440, 880)
    finally:
        dist.destroy_process_group()
