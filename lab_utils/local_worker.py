"""Run a Runpod serverless handler locally, as its SDK's test API on 127.0.0.1, and talk to it.

    with local_worker.serve(course_files.path("worker/handler.py")) as worker:
        worker.runsync({"prompt": "Hi"})        # {"id": ..., "status": "COMPLETED", "output": ...}
        job_id = worker.run({"prompt": "Hi"})   # queued; locally it runs when polled
        worker.status(job_id)                   # POST, as the SDK's local API expects

The process is started in a session of its own and, on leaving the ``with`` block (or on any
error), it and every child it started are stopped: nothing is left running. Stdlib + psutil,
no torch.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections import deque
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from threading import Thread

HOST = "127.0.0.1"  # loopback only: the local API is never exposed


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((HOST, 0))
        return probe.getsockname()[1]


@dataclass
class LocalWorker:
    """A running local worker: its URL, process, and the seconds from start to first answer."""

    url: str
    process: subprocess.Popen
    started_s: float  # time.perf_counter() when the process was started
    cold_start_s: float | None = None  # set by the first successful request
    log: deque = field(default_factory=lambda: deque(maxlen=50))

    def _post(self, path: str, body: dict | None, timeout_s: float) -> dict:
        data = b"" if body is None else json.dumps(body).encode()
        request = urllib.request.Request(
            self.url + path, data=data, headers={"Content-Type": "application/json"}
        )
        with urllib.request.urlopen(request, timeout=timeout_s) as response:
            return json.loads(response.read())

    def runsync(self, job_input, timeout_s: float = 60.0) -> dict:
        """POST /runsync: run one job and return the SDK's answer (``output`` or ``error``)."""
        return self._post("/runsync", {"input": job_input}, timeout_s)

    def run(self, job_input, timeout_s: float = 60.0) -> str:
        """POST /run: queue one job and return its id."""
        return self._post("/run", {"input": job_input}, timeout_s)["id"]

    def status(self, job_id: str, timeout_s: float = 60.0) -> dict:
        """POST /status/{id}: the job's state (the local API runs a queued job when polled)."""
        return self._post(f"/status/{job_id}", None, timeout_s)

    def wait_until_ready(self, first_input, timeout_s: float) -> dict:
        """Send ``first_input`` until the server answers; record the cold start; return the answer."""
        deadline_s = self.started_s + timeout_s
        while True:
            if self.process.poll() is not None:
                raise RuntimeError(
                    f"the worker exited with status {self.process.returncode} before answering:\n"
                    + "\n".join(self.log)
                )
            try:
                answer = self.runsync(first_input, timeout_s=timeout_s)
            except (urllib.error.URLError, ConnectionError, OSError):
                if time.perf_counter() > deadline_s:
                    raise TimeoutError(f"the worker did not answer within timeout_s={timeout_s}") from None
                time.sleep(0.02)
                continue
            self.cold_start_s = time.perf_counter() - self.started_s
            return answer


def stop(process: subprocess.Popen, grace_s: float = 5.0) -> None:
    """Stop ``process`` and all its children: SIGTERM, then SIGKILL after ``grace_s``."""
    import psutil

    try:
        family = [psutil.Process(process.pid)]
        family += family[0].children(recursive=True)
    except psutil.NoSuchProcess:
        family = []
    for member in family:
        try:
            member.terminate()
        except psutil.NoSuchProcess:
            pass
    _, alive = psutil.wait_procs(family, timeout=grace_s)
    for member in alive:
        member.kill()
    psutil.wait_procs(alive, timeout=grace_s)
    process.wait(timeout=grace_s)


@contextmanager
def serve(handler_path, first_input=None, *, port: int | None = None, timeout_s: float = 60.0):
    """Start ``handler_path`` with ``--rp_serve_api`` on 127.0.0.1 and yield a ready LocalWorker.

    ``first_input`` is the job sent until the server answers (it measures the cold start: process
    start to first answer); by default {"prompt": "warm up"}. Everything stops on exit.
    """
    handler_path = Path(handler_path)
    if not handler_path.is_file():
        raise ValueError(f"handler_path={str(handler_path)!r} is not a file")
    if timeout_s <= 0:
        raise ValueError(f"timeout_s={timeout_s!r}: must be > 0")
    port = free_port() if port is None else port
    command = [
        sys.executable,
        str(handler_path.resolve()),
        "--rp_serve_api",
        "--rp_api_host",
        HOST,
        "--rp_api_port",
        str(port),
        "--rp_log_level",
        "ERROR",
    ]
    started_s = time.perf_counter()
    process = subprocess.Popen(
        command,
        cwd=handler_path.parent,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    worker = LocalWorker(url=f"http://{HOST}:{port}", process=process, started_s=started_s)
    # Keep the last lines of output for error messages, without letting the pipe fill up.
    Thread(target=lambda: [worker.log.append(line.rstrip()) for line in process.stdout], daemon=True).start()
    try:
        worker.wait_until_ready({"prompt": "warm up"} if first_input is None else first_input, timeout_s)
        yield worker
    finally:
        stop(process)
