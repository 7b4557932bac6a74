"""Scaling out: launching ``torchrun`` safely, and measuring inside the ranks.

Processes: :func:`torchrun_command` builds the launch command (one node on 127.0.0.1, or a
node of a multi-node job), and :func:`run_torchrun` runs it as a subprocess with a timeout,
then makes sure that no process it started is left. Inside the launched processes,
:func:`parameter_digest` fingerprints a model's parameters bit for bit,
:func:`time_all_reduce` times all-reduces, :func:`count_collectives` counts the bytes every
collective and point-to-point call of a rank moves, and :func:`held_state_bytes` adds up the
weights, gradients and optimizer state a rank holds (its shards only); these import torch, lazily.

The cost formulas (all-reduce bytes and seconds, bus bandwidth, the α-β fit, a data-parallel
step, the backend choice) live in the pure module ``lab_utils.comms`` and are re-exported here.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from lab_utils import checks
from lab_utils.comms import (
    AllReduceFit,
    Backend,
    DataParallelStep,
    bus_bandwidth_bytes_per_s,
    choose_backend,
    data_parallel_step,
    fit_all_reduce,
    ring_all_reduce_bytes,
    ring_all_reduce_seconds,
)
from lab_utils.distributed_rank import (
    AllReduceTiming,
    CollectiveCall,
    CollectiveCounter,
    HeldState,
    count_collectives,
    held_state_bytes,
    parameter_digest,
    time_all_reduce,
)

__all__ = [
    "AllReduceFit",
    "AllReduceTiming",
    "Backend",
    "CollectiveCall",
    "CollectiveCounter",
    "DataParallelStep",
    "HeldState",
    "TorchrunError",
    "TorchrunResult",
    "bus_bandwidth_bytes_per_s",
    "choose_backend",
    "count_collectives",
    "data_parallel_step",
    "fit_all_reduce",
    "held_state_bytes",
    "parameter_digest",
    "ring_all_reduce_bytes",
    "ring_all_reduce_seconds",
    "run_torchrun",
    "time_all_reduce",
    "torchrun_command",
    "write_result",
]

LOOPBACK = "127.0.0.1"
"""Where single-node runs meet: the rendezvous and the ranks' sockets stay on this machine."""

TORCHRUN = (sys.executable, "-m", "torch.distributed.run")
"""``torchrun`` with this Python: the same interpreter (and venv) as the caller."""

_MARKER = "LAB_UTILS_TORCHRUN_ID"  # set in every launched process's environment, to find them all


# --- launching torchrun --------------------------------------------------------------------


def write_result(path, result: dict) -> Path:
    """Write a rank's ``result`` as JSON to ``path`` atomically (a ``.partial`` file, then a
    rename), so that whoever reads it after the run never sees half a file; returns the path.

    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     json.loads(write_result(Path(folder) / "out" / "r.json", {"steps": 3}).read_text())
    {'steps': 3}
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(path.name + ".partial")
    partial.write_text(json.dumps(result, indent=1))
    partial.replace(path)
    return path


def torchrun_command(
    script,
    script_args: Sequence[str] = (),
    *,
    nproc_per_node: int = 2,
    nnodes: int = 1,
    node_rank: int = 0,
    master_addr: str = LOOPBACK,
    master_port: int | None = None,
    launcher: Sequence[str] = TORCHRUN,
) -> tuple[str, ...]:
    """The ``torchrun`` command line for ``script``.

    One node (``nnodes=1``): what ``--standalone`` does (a c10d rendezvous on a free port),
    but on ``master_addr`` (127.0.0.1) rather than "localhost". Several nodes: the static
    rendezvous run on every node, ``--nnodes N --node_rank R --master_addr A --master_port P``,
    with the same script and arguments everywhere. The ranks connect to ``master_addr`` only;
    torch's TCP store on node 0 takes no bind address and listens on every interface while the
    run lasts (torch 2.13), so on a shared network keep the port behind a firewall.
    """
    nproc_per_node = checks.count("nproc_per_node", nproc_per_node)
    nnodes = checks.count("nnodes", nnodes)
    node_rank = checks.count("node_rank", node_rank, minimum=0)
    if node_rank >= nnodes:
        raise ValueError(f"node_rank={node_rank!r}: must be below nnodes={nnodes}")
    if not isinstance(master_addr, str) or not master_addr.strip():
        raise ValueError(f"master_addr={master_addr!r}: must be a host name or an IP address")
    if isinstance(script_args, (str, bytes)) or not all(isinstance(a, str) for a in script_args):
        raise TypeError(f"script_args must be a sequence of str, got {script_args!r}")
    if isinstance(launcher, str) or not launcher or not all(isinstance(a, str) for a in launcher):
        raise TypeError(f"launcher must be a non-empty sequence of str, got {launcher!r}")
    if nnodes == 1:
        if master_port is not None:
            checks.count("master_port", master_port, minimum=0)
        port = 0 if master_port is None else master_port
        where = [
            "--rdzv_backend",
            "c10d",
            "--rdzv_endpoint",
            f"{master_addr}:{port}",
            "--rdzv_id",
            "local",
            "--local_addr",
            master_addr,
        ]
    else:
        if master_port is None:
            raise ValueError("master_port is required when nnodes > 1: every node must name the same port")
        if not 1 <= checks.count("master_port", master_port) <= 65535:
            raise ValueError(f"master_port={master_port!r}: must be a TCP port from 1 to 65535")
        where = [
            "--node_rank",
            str(node_rank),
            "--master_addr",
            master_addr,
            "--master_port",
            str(master_port),
        ]
    return (
        *launcher,
        "--nnodes",
        str(nnodes),
        "--nproc_per_node",
        str(nproc_per_node),
        *where,
        str(script),
        *script_args,
    )


@dataclass(frozen=True)
class TorchrunResult:
    """A finished ``torchrun``: its command, exit status, ``wall_s`` (wall-clock seconds, launch included),
    combined stdout and stderr, and the ids of processes still alive after the cleanup (none,
    unless something resisted SIGKILL)."""

    command: tuple[str, ...]
    returncode: int
    wall_s: float
    output: str
    leftover_pids: tuple[int, ...]


class TorchrunError(RuntimeError):
    """torchrun failed or timed out; ``result`` holds what it printed."""

    def __init__(self, message: str, result: TorchrunResult):
        tail = "\n".join(result.output.strip().splitlines()[-25:])
        super().__init__(f"{message}\n--- last lines of its output ---\n{tail}")
        self.result = result


def _loopback_interface() -> str | None:
    """The name of the network interface that holds 127.0.0.1 ('lo' on Linux, 'lo0' on macOS)."""
    import psutil

    for name, addresses in psutil.net_if_addrs().items():
        if any(address.address == LOOPBACK for address in addresses):
            return name
    return None


def _marked_processes(marker: str) -> list:
    """This user's processes whose environment carries ``marker``: everything a launch started,
    even a worker whose parent has died."""
    import psutil

    found = []
    uid = os.getuid() if hasattr(os, "getuid") else None
    for process in psutil.process_iter(["uids"]):
        try:
            if uid is not None and process.info["uids"] is not None and process.info["uids"].real != uid:
                continue
            if process.environ().get(_MARKER) == marker:
                found.append(process)
        except (psutil.Error, OSError):
            continue
    return found


def _stop_all(process: subprocess.Popen, marker: str, grace_s: float = 5.0) -> tuple[int, ...]:
    """Stop ``process``, its children and every process carrying ``marker``; return the ids of
    those still alive afterwards."""
    import psutil

    from lab_utils import local_worker

    local_worker.stop(process, grace_s=grace_s)  # SIGTERM to the family, SIGKILL after grace_s
    stragglers = _marked_processes(marker)  # e.g. a worker whose torchrun died before it
    for straggler in stragglers:
        with contextlib.suppress(psutil.NoSuchProcess):
            straggler.kill()
    return tuple(p.pid for p in psutil.wait_procs(stragglers, timeout=grace_s)[1])


def platform_env(platform: str) -> dict[str, str]:
    """Variables ``torchrun`` needs on ``platform`` (``sys.platform``): on Windows ``USE_LIBUV=0``,
    since PyTorch's Windows builds have no libuv and the rendezvous then stops with "use_libuv was
    requested but PyTorch was built without libuv support" (pytorch/pytorch#139990).

    >>> platform_env("win32"), platform_env("linux")
    ({'USE_LIBUV': '0'}, {})
    """
    return {"USE_LIBUV": "0"} if platform == "win32" else {}


def run_torchrun(
    script,
    script_args: Sequence[str] = (),
    *,
    nproc_per_node: int = 2,
    timeout_s: float = 120.0,
    cwd=None,
    env: dict | None = None,
    check: bool = True,
    **where,
) -> TorchrunResult:
    """Run ``script`` under ``torchrun`` with ``nproc_per_node`` processes and wait for it.

    The command is :func:`torchrun_command` (``where``: ``nnodes``, ``node_rank``,
    ``master_addr``, ``master_port``, ``launcher``), run in ``cwd`` with the environment plus
    ``env`` (extra variables). The processes get
    ``OMP_NUM_THREADS`` = cores / processes (unless ``env`` or the environment sets it), the
    loopback interface for gloo and NCCL sockets when ``master_addr`` is 127.0.0.1,
    :func:`platform_env` (``USE_LIBUV=0`` on Windows) unless the environment sets it, and the
    folder holding this ``lab_utils`` on ``PYTHONPATH``. After ``timeout_s`` seconds it is
    stopped. Whatever happens (success, failure, timeout, an interrupt), every process the
    launch started is stopped before this returns or raises. With ``check``, a non-zero exit
    raises :class:`TorchrunError`; a timeout always does.
    """
    script = Path(script)
    if not script.is_file():
        raise ValueError(f"script={str(script)!r} is not a file")
    timeout_s = checks.number("timeout_s", timeout_s)
    script_args = tuple(script_args) if not isinstance(script_args, (str, bytes)) else script_args
    command = torchrun_command(script.resolve(), script_args, nproc_per_node=nproc_per_node, **where)
    if env is not None and not isinstance(env, dict):
        raise TypeError(
            f"env must be a dict of extra environment variables or None, got {type(env).__name__}"
        )
    marker = uuid.uuid4().hex
    child_env = {**os.environ, **(env or {}), _MARKER: marker}
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # macOS, Windows
        cores = os.cpu_count() or 1
    child_env.setdefault("OMP_NUM_THREADS", str(max(1, cores // nproc_per_node)))
    for name, value in platform_env(sys.platform).items():
        child_env.setdefault(name, value)
    if command[command.index("--nnodes") + 1] == "1" or where.get("master_addr") == LOOPBACK:
        loopback = _loopback_interface()
        if loopback:
            child_env.setdefault("GLOO_SOCKET_IFNAME", loopback)
            child_env.setdefault("NCCL_SOCKET_IFNAME", loopback)
    package_root = str(Path(__file__).resolve().parents[1])
    child_env["PYTHONPATH"] = os.pathsep.join(p for p in (package_root, child_env.get("PYTHONPATH")) if p)

    started_s = time.perf_counter()
    process = subprocess.Popen(
        command,
        cwd=cwd,
        env=child_env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    # Read the output on a thread and wait for the process, not for the end of its output: a
    # worker that outlived torchrun would hold the pipe open.
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(process.stdout), daemon=True)
    reader.start()
    timed_out = False
    try:
        process.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        timed_out = True
    finally:  # also on KeyboardInterrupt: nothing may outlive the call
        leftover = _stop_all(process, marker)
        reader.join(timeout=5)
        if not reader.is_alive():
            process.stdout.close()
    output = "".join(lines)
    result = TorchrunResult(
        command=command,
        returncode=process.returncode,
        wall_s=time.perf_counter() - started_s,
        output=output,
        leftover_pids=leftover,
    )
    if timed_out:
        raise TorchrunError(
            f"torchrun did not finish within timeout_s={timeout_s:g}; every process was stopped", result
        )
    if check and result.returncode != 0:
        raise TorchrunError(f"torchrun exited with status {result.returncode}", result)
    return result
