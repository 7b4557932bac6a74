"""The serverless worker shipped in lab_utils/data/worker: its handler, and the SDK's local API around it."""

import concurrent.futures
import json
import subprocess
import sys

import psutil
import pytest
from loading import load_module

from lab_utils import course_files, local_worker, machine

HANDLER_PATH = course_files.path("worker/handler.py")


@pytest.fixture(scope="module")
def handler_module():
    return load_module("course_worker_handler", HANDLER_PATH)


def test_handler_completes_a_prompt(handler_module):
    answer = handler_module.handler({"input": {"prompt": "Hello", "max_new_tokens": 5}})
    assert set(answer) == {"completion", "new_tokens", "seconds", "device"}
    assert answer["device"].split(":")[0] == machine.pick_device().type  # "cpu" here, "cuda: <name>" on a GPU
    assert answer["new_tokens"] == 5
    assert 1 <= len(answer["completion"]) <= 5 * 4  # up to 4 characters per byte-token decoded
    assert answer["seconds"] > 0


def test_handler_is_deterministic(handler_module):
    job = {"input": {"prompt": "same prompt", "max_new_tokens": 6}}
    assert handler_module.handler(job)["completion"] == handler_module.handler(job)["completion"]


def test_default_number_of_new_tokens(handler_module):
    answer = handler_module.handler({"input": {"prompt": "x"}})
    assert answer["new_tokens"] == handler_module.DEFAULT_NEW_TOKENS


@pytest.mark.parametrize(
    "job, fragment",
    [
        ({}, "input must be a JSON object"),
        ({"input": "just text"}, "input must be a JSON object"),
        ({"input": {}}, "prompt"),
        ({"input": {"prompt": ""}}, "prompt"),
        ({"input": {"prompt": 42}}, "prompt"),
        ({"input": {"prompt": "x" * 2001}}, "prompt"),
        ({"input": {"prompt": "x", "max_new_tokens": 0}}, "max_new_tokens"),
        ({"input": {"prompt": "x", "max_new_tokens": 65}}, "max_new_tokens"),
        ({"input": {"prompt": "x", "max_new_tokens": True}}, "max_new_tokens"),
        ({"input": {"prompt": "x", "temperature": 0.7}}, "unknown input field"),
        ("not a job", "input must be a JSON object"),
    ],
)
def test_handler_returns_an_error_object_for_bad_input(handler_module, job, fragment):
    answer = handler_module.handler(job)
    assert set(answer) == {"error"}
    assert fragment in answer["error"]


@pytest.mark.slow
def test_test_input_mode_exits_0_on_success_and_1_on_bad_input():
    pytest.importorskip("runpod")

    def run(job):
        return subprocess.run(
            [sys.executable, str(HANDLER_PATH), "--test_input", json.dumps(job)],
            capture_output=True,
            text=True,
            timeout=120,
            cwd=HANDLER_PATH.parent,
        )

    assert run({"input": {"prompt": "Hi", "max_new_tokens": 2}}).returncode == 0
    assert run({"input": {"prompt": ""}}).returncode == 1


@pytest.mark.slow
def test_local_api_answers_30_requests_at_concurrency_10_and_leaves_no_process(handler_module):
    pytest.importorskip("runpod")
    jobs = [{"prompt": f"request {i}", "max_new_tokens": 3} for i in range(30)]
    expected = [handler_module.handler({"input": job})["completion"] for job in jobs]
    with local_worker.serve(HANDLER_PATH) as worker:
        assert 0 < worker.cold_start_s < 60
        family = [worker.process.pid] + [
            c.pid for c in psutil.Process(worker.process.pid).children(recursive=True)
        ]
        with concurrent.futures.ThreadPoolExecutor(max_workers=10) as pool:
            answers = list(pool.map(worker.runsync, jobs))
        failed = worker.runsync({"prompt": ""})
        job_id = worker.run(jobs[0])
        queued = worker.status(job_id)
    assert [a["status"] for a in answers] == ["COMPLETED"] * len(jobs)
    assert [a["output"]["completion"] for a in answers] == expected
    assert failed["status"] == "FAILED" and "prompt" in failed["error"]
    assert queued["status"] == "COMPLETED" and queued["output"]["completion"] == expected[0]
    assert not [pid for pid in family if psutil.pid_exists(pid)], "a worker process was left running"


def test_serve_stops_the_process_when_the_handler_fails_to_start(tmp_path):
    broken = tmp_path / "broken.py"
    broken.write_text("raise SystemExit(3)\n")
    with pytest.raises(RuntimeError, match="exited with status 3"):
        with local_worker.serve(broken, timeout_s=30):
            pass


@pytest.mark.slow
def test_serve_refuses_a_missing_handler(tmp_path):
    with pytest.raises(ValueError, match="handler_path"):
        with local_worker.serve(tmp_path / "nowhere.py"):
            pass
