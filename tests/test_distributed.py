"""lab_utils.comms: all-reduce cost formulas; lab_utils.distributed: the torchrun launcher and
real DDP runs.

The integration tests launch lab_utils/data/scripts/ddp_train.py (course_files) with torchrun on
the CPU (gloo): two processes on one node, and two single-process "nodes" on this machine with the multi-node
command line, and check that every rank ends with bit-identical parameters and that no
process is left behind.
"""

import json
import math
import socket
import subprocess
import sys
import textwrap
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import psutil
import pytest

from lab_utils import comms, course_files, distributed

ROOT = Path(__file__).resolve().parents[1]
DDP_SCRIPT = course_files.path("scripts/ddp_train.py")


# --- formulas on known values --------------------------------------------------------------


def test_ring_all_reduce_bytes_known_values():
    assert comms.ring_all_reduce_bytes(1e9, 1) == 0
    assert comms.ring_all_reduce_bytes(1e9, 2) == pytest.approx(1e9)  # 2(N-1)/N = 1
    assert comms.ring_all_reduce_bytes(1e9, 4) == pytest.approx(1.5e9)
    assert comms.ring_all_reduce_bytes(1e9, 1024) == pytest.approx(2e9 * 1023 / 1024)


def test_ring_all_reduce_seconds_known_values():
    # 8 ranks, 1 GB, 100 GB/s, 5 µs per step: 14 steps x 5 µs + 1.75 GB / 100 GB/s
    seconds = comms.ring_all_reduce_seconds(1e9, 8, bandwidth_bytes_per_s=100e9, latency_s=5e-6)
    assert seconds == pytest.approx(14 * 5e-6 + 0.0175)
    assert comms.ring_all_reduce_seconds(64 * 2**20, 2, bandwidth_bytes_per_s=1e9) == pytest.approx(
        0.067108864
    )
    assert comms.ring_all_reduce_seconds(1e9, 1, bandwidth_bytes_per_s=1e9, latency_s=1.0) == 0


def test_bus_bandwidth_matches_nccl_tests_definition():
    # nccl-tests: busbw = algbw x 2(N-1)/N; algbw = bytes / time
    assert comms.bus_bandwidth_bytes_per_s(1e9, 1.0, 8) == pytest.approx(1.75e9)
    assert comms.bus_bandwidth_bytes_per_s(1e9, 0.5, 2) == pytest.approx(2e9)


@pytest.mark.parametrize("n_ranks", [2, 8])
def test_fit_recovers_known_latency_and_bandwidth(n_ranks):
    latency_s, bandwidth = 20e-6, 3e9
    sizes = [4**k * 1024 for k in range(1, 9)]
    noise = [1.03, 0.97, 1.02, 0.99, 1.01, 0.98, 1.02, 1.0]
    times = [
        comms.ring_all_reduce_seconds(s, n_ranks, bandwidth_bytes_per_s=bandwidth, latency_s=latency_s) * e
        for s, e in zip(sizes, noise)
    ]
    exact = comms.fit_all_reduce(sizes, [t / e for t, e in zip(times, noise)], n_ranks)
    assert exact.latency_s == pytest.approx(latency_s, rel=1e-9)
    assert exact.bandwidth_bytes_per_s == pytest.approx(bandwidth, rel=1e-9)
    noisy = comms.fit_all_reduce(sizes, times, n_ranks)
    assert noisy.latency_s == pytest.approx(latency_s, rel=0.1)
    assert noisy.bandwidth_bytes_per_s == pytest.approx(bandwidth, rel=0.1)
    assert noisy.seconds(sizes[-1]) == pytest.approx(times[-1], rel=0.1)


def test_fit_clamps_a_negative_latency_to_zero():
    fit = comms.fit_all_reduce([1e6, 2e6, 4e6], [0.9e-3, 2.0e-3, 4.1e-3], 2)
    assert fit.latency_s == 0
    assert fit.bandwidth_bytes_per_s == pytest.approx(1e9, rel=0.1)


def test_data_parallel_step_bounds():
    step = comms.data_parallel_step(0.3, 1e9, 2, bandwidth_bytes_per_s=10e9)
    assert step.communication_s == pytest.approx(0.1)
    assert step.serial_s == pytest.approx(0.4)
    assert step.overlapped_s == pytest.approx(0.3)
    assert step.compute_to_communication == pytest.approx(3.0)
    assert (
        comms.data_parallel_step(1.0, 1e9, 1, bandwidth_bytes_per_s=1e9).compute_to_communication == math.inf
    )


@pytest.mark.parametrize(
    "gpus, local_ranks, expected",
    [
        (0, 2, ("gloo", "cpu")),
        (1, 2, ("gloo", "cpu")),
        (2, 2, ("nccl", "cuda")),
        (8, 4, ("nccl", "cuda")),
        (1, 1, ("nccl", "cuda")),
    ],
)
def test_choose_backend(gpus, local_ranks, expected):
    backend = comms.choose_backend(gpus, local_ranks)
    assert (backend.name, backend.device_type) == expected
    assert backend.reason


def test_distributed_still_exports_the_formulas():
    assert distributed.fit_all_reduce is comms.fit_all_reduce
    assert distributed.choose_backend is comms.choose_backend


def test_single_node_command_stays_on_loopback():
    command = distributed.torchrun_command("train.py", ["--out", "r.json"], nproc_per_node=2)
    assert command[:3] == (sys.executable, "-m", "torch.distributed.run")
    text = " ".join(command)
    assert "--nnodes 1 --nproc_per_node 2" in text
    assert "--rdzv_endpoint 127.0.0.1:0" in text and "--local_addr 127.0.0.1" in text
    assert command[-3:] == ("train.py", "--out", "r.json")


def test_multi_node_command_is_the_documented_static_rendezvous():
    command = distributed.torchrun_command(
        "train.py",
        ["--out", "r.json"],
        nproc_per_node=8,
        nnodes=4,
        node_rank=3,
        master_addr="10.0.0.1",
        master_port=29500,
        launcher=("torchrun",),
    )
    assert command == (
        "torchrun",
        "--nnodes",
        "4",
        "--nproc_per_node",
        "8",
        "--node_rank",
        "3",
        "--master_addr",
        "10.0.0.1",
        "--master_port",
        "29500",
        "train.py",
        "--out",
        "r.json",
    )


# --- bad input -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "call, error, match",
    [
        (lambda: comms.ring_all_reduce_bytes(-1, 2), ValueError, "message_bytes=-1"),
        (lambda: comms.ring_all_reduce_bytes(1e6, 0), ValueError, "n_ranks=0"),
        (lambda: comms.ring_all_reduce_bytes(1e6, 2.0), TypeError, "n_ranks must be an int"),
        (lambda: comms.ring_all_reduce_bytes("1e6", 2), TypeError, "message_bytes must be a number"),
        (
            lambda: comms.ring_all_reduce_seconds(1e6, 2, bandwidth_bytes_per_s=0),
            ValueError,
            "bandwidth_bytes_per_s=0",
        ),
        (
            lambda: comms.ring_all_reduce_seconds(1e6, 2, bandwidth_bytes_per_s=1e9, latency_s=math.nan),
            ValueError,
            "latency_s=nan",
        ),
        (lambda: comms.bus_bandwidth_bytes_per_s(1e6, 0.0, 2), ValueError, "seconds=0.0"),
        (lambda: comms.fit_all_reduce([1e3, 1e6], [1e-3], 2), ValueError, "seconds has 1"),
        (lambda: comms.fit_all_reduce([1e3, 1e3], [1e-3, 1e-3], 2), ValueError, "two different sizes"),
        (lambda: comms.fit_all_reduce([1e3, 1e6], [1e-3, 1e-4], 2), ValueError, "do not grow"),
        (lambda: comms.fit_all_reduce([1e3, 1e6], [1e-3, 1e-2], 1), ValueError, "n_ranks=1"),
        (lambda: comms.fit_all_reduce("abc", [1e-3], 2), TypeError, "message_bytes must be a sequence"),
        (lambda: comms.data_parallel_step(-1, 1e6, 2, bandwidth_bytes_per_s=1e9), ValueError, "compute_s=-1"),
        (lambda: comms.choose_backend(-1, 2), ValueError, "cuda_device_count=-1"),
        (lambda: comms.choose_backend(1, 0), ValueError, "local_world_size=0"),
        (lambda: distributed.torchrun_command("t.py", nproc_per_node=0), ValueError, "nproc_per_node=0"),
        (
            lambda: distributed.torchrun_command("t.py", nnodes=2, node_rank=2, master_port=29500),
            ValueError,
            "node_rank=2",
        ),
        (lambda: distributed.torchrun_command("t.py", nnodes=2), ValueError, "master_port is required"),
        (
            lambda: distributed.torchrun_command("t.py", nnodes=2, master_port=70000),
            ValueError,
            "master_port=70000",
        ),
        (
            lambda: distributed.torchrun_command("t.py", "--out x"),
            TypeError,
            "script_args must be a sequence of str",
        ),
        (lambda: distributed.torchrun_command("t.py", [1]), TypeError, "script_args"),
        (lambda: distributed.torchrun_command("t.py", master_addr=""), ValueError, "master_addr=''"),
        (lambda: distributed.run_torchrun(ROOT / "nowhere.py"), ValueError, "is not a file"),
        (lambda: distributed.run_torchrun(DDP_SCRIPT, timeout_s=0), ValueError, "timeout_s=0"),
        (lambda: distributed.run_torchrun(DDP_SCRIPT, env=["A=1"]), TypeError, "env must be a dict"),
    ],
)
def test_bad_input_names_the_parameter(call, error, match):
    with pytest.raises(error, match=match):
        call()


def test_parameter_digest_sees_one_flipped_bit():
    torch = pytest.importorskip("torch")
    from lab_utils import models

    torch.manual_seed(0)
    first = models.MLP([4, 8, 2])
    torch.manual_seed(0)
    second = models.MLP([4, 8, 2])
    assert distributed.parameter_digest(first) == distributed.parameter_digest(second)
    with torch.no_grad():
        bits = second.layers[0].weight.view(torch.int32)
        bits[0, 0] ^= 1  # the lowest mantissa bit of one weight
    assert distributed.parameter_digest(first) != distributed.parameter_digest(second)
    assert distributed.parameter_digest(first) != distributed.parameter_digest(first.double())
    with pytest.raises(TypeError, match="module must be a torch.nn.Module"):
        distributed.parameter_digest([1, 2])


def test_time_all_reduce_needs_a_process_group():
    pytest.importorskip("torch")
    with pytest.raises(RuntimeError, match="torchrun"):
        distributed.time_all_reduce([1024])


# --- the launcher's cleanup, with a stand-in for torchrun ----------------------------------

FAKE_LAUNCHER = textwrap.dedent("""
    # Behaves like torchrun where it matters: starts workers in sessions of their own.
    import os, subprocess, sys, time
    sleeper = [sys.executable, "-c", "import time; time.sleep(600)"]
    workers = [subprocess.Popen(sleeper, start_new_session=True) for _ in range(2)]
    with open(os.environ["FAKE_PIDS"], "w") as pids:
        pids.write(" ".join(str(w.pid) for w in workers))
    mode = os.environ["FAKE_MODE"]
    if mode == "hang":
        time.sleep(600)
    elif mode == "fail":
        print("worker failed", flush=True)
        sys.exit(3)
    # "orphan": exit at once and leave the workers behind
""")


def _gone(pid: int, within_s: float = 5.0) -> bool:
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        try:
            if psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
                return True
        except psutil.NoSuchProcess:
            return True
        time.sleep(0.05)
    return False


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["hang", "fail", "orphan"])
def test_no_process_is_left_whatever_happens(tmp_path, mode):
    launcher = tmp_path / "fake_torchrun.py"
    launcher.write_text(FAKE_LAUNCHER)
    pids_file = tmp_path / "pids"
    script = tmp_path / "script.py"
    script.write_text("")
    kwargs = dict(
        launcher=(sys.executable, str(launcher)), env={"FAKE_MODE": mode, "FAKE_PIDS": str(pids_file)}
    )
    if mode == "hang":
        with pytest.raises(distributed.TorchrunError, match="did not finish within timeout_s=8") as caught:
            distributed.run_torchrun(
                script, timeout_s=8, **kwargs
            )  # time for a busy machine to start both workers
        result = caught.value.result
    elif mode == "fail":
        with pytest.raises(distributed.TorchrunError, match="(?s)exited with status 3.*worker failed"):
            distributed.run_torchrun(script, timeout_s=30, **kwargs)
        result = distributed.run_torchrun(script, timeout_s=30, check=False, **kwargs)
        assert result.returncode == 3
    else:
        result = distributed.run_torchrun(script, timeout_s=30, **kwargs)
        assert result.returncode == 0
    assert result.leftover_pids == ()
    workers = [int(pid) for pid in pids_file.read_text().split()]
    assert len(workers) == 2
    assert all(_gone(pid) for pid in workers), "a worker survived the launch"


# --- real DDP runs with torchrun (gloo on the CPU) -----------------------------------------


def _processes_running(path: Path) -> list:
    """Live processes with ``path`` in their command line (a path unique to one test, so that
    another run of the same script on the machine, e.g. a notebook's, is not counted)."""
    found = []
    for process in psutil.process_iter(["cmdline"]):
        if any(str(path) in part for part in (process.info["cmdline"] or [])):
            if process.status() != psutil.STATUS_ZOMBIE:
                found.append(process.pid)
    return found


def _untrained_digest(kind: str, seed: int) -> str:
    torch = pytest.importorskip("torch")
    sys.path.insert(0, str(DDP_SCRIPT.parent))
    try:
        import ddp_train
    finally:
        sys.path.remove(str(DDP_SCRIPT.parent))
    torch.manual_seed(seed)
    return distributed.parameter_digest(ddp_train.make_model(kind))


@pytest.mark.slow
def test_ddp_ranks_agree_bit_for_bit_after_training(tmp_path):
    pytest.importorskip("torch")
    out = tmp_path / "result.json"
    result = distributed.run_torchrun(
        DDP_SCRIPT,
        [
            "--out",
            str(out),
            "--steps",
            "6",
            "--compute-steps",
            "1",
            "--allreduce-sizes",
            "4096",
            "65536",
            "--allreduce-repeats",
            "2",
        ],
        nproc_per_node=2,
        timeout_s=240,
    )
    assert result.returncode == 0 and result.leftover_pids == ()
    assert _processes_running(out) == []  # the ranks were given this test's own --out
    report = json.loads(out.read_text())
    assert report["world_size"] == 2 and report["nnodes"] == 1 and report["backend"] == "gloo"
    digests = [rank["digest"] for rank in sorted(report["ranks"], key=lambda r: r["rank"])]
    assert len(digests) == 2 and digests[0] == digests[1] and report["identical"] is True
    assert digests[0] != _untrained_digest("gpt", 0), "the parameters did not change: no training happened"
    assert len(report["losses"]) == 6 and report["losses"][-1] < report["losses"][0]
    assert [row["message_bytes"] for row in report["allreduce"]] == [4096, 65536]
    assert all(0 < row["min_s"] <= row["median_s"] for row in report["allreduce"])
    assert report["gradient_bytes"] == 4 * report["n_params"]
    assert not list(tmp_path.glob("*.partial"))


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.mark.slow
def test_the_multi_node_command_runs_unchanged(tmp_path):
    """Two 'nodes' of one process each, on this machine, with --nnodes 2 --node_rank R --master_addr."""
    pytest.importorskip("torch")
    port = _free_port()
    outs = [tmp_path / f"node{r}.json" for r in range(2)]

    def node(rank):
        return distributed.run_torchrun(
            DDP_SCRIPT,
            ["--out", str(outs[rank]), "--steps", "4", "--compute-steps", "0", "--model", "mlp"],
            nproc_per_node=1,
            nnodes=2,
            node_rank=rank,
            master_addr="127.0.0.1",
            master_port=port,
            timeout_s=240,
        )

    with ThreadPoolExecutor(2) as pool:
        results = list(pool.map(node, range(2)))
    assert all(r.returncode == 0 and r.leftover_pids == () for r in results)
    report = json.loads(outs[0].read_text())  # global rank 0 lives on node 0
    assert not outs[1].exists()
    assert report["world_size"] == 2 and report["nnodes"] == 2 and report["identical"] is True
    assert report["ranks"][0]["digest"] == report["ranks"][1]["digest"] != _untrained_digest("mlp", 0)


@pytest.mark.slow
def test_ddp_script_explains_how_to_launch_it(tmp_path):
    finished = subprocess.run(
        [sys.executable, str(DDP_SCRIPT), "--out", str(tmp_path / "r.json")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert finished.returncode == 2 and "torchrun" in finished.stderr
