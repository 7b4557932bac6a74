"""book/_ext/shell_poll.py: nbclient's wait for a kernel's reply, polled in slices so that a missed
wake-up costs a fraction of a second instead of the whole cell timeout."""

import asyncio
import sys
from pathlib import Path
from queue import Empty

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "book" / "_ext"))
import shell_poll  # noqa: E402
from jupyter_client.channels import AsyncZMQSocketChannel  # noqa: E402


@pytest.fixture
def sliced(monkeypatch):
    """AsyncZMQSocketChannel.get_msg sliced over a fake single poll that records its timeouts."""
    asked_timeouts_s = []
    replies = []

    async def poll_once(self, timeout=None):
        asked_timeouts_s.append(timeout)
        if replies and len(asked_timeouts_s) >= replies[0][0]:
            return replies.pop(0)[1]
        raise Empty

    monkeypatch.setattr(AsyncZMQSocketChannel, "get_msg", poll_once)
    shell_poll.install()
    return AsyncZMQSocketChannel.get_msg, asked_timeouts_s, replies


def test_a_reply_missed_by_one_poll_is_taken_by_the_next_slice(sliced):
    get_msg, asked_timeouts_s, replies = sliced
    replies.append((3, {"msg_type": "execute_reply"}))
    assert asyncio.run(get_msg(object(), timeout=600)) == {"msg_type": "execute_reply"}
    assert len(asked_timeouts_s) == 3
    assert all(0 < timeout_s <= shell_poll.SLICE_S for timeout_s in asked_timeouts_s)


def test_the_callers_deadline_still_raises_empty(sliced):
    get_msg, asked_timeouts_s, _ = sliced
    with pytest.raises(Empty):
        asyncio.run(get_msg(object(), timeout=0))
    assert asked_timeouts_s == [0.0]


def test_no_timeout_waits_in_slices_until_a_message(sliced):
    get_msg, asked_timeouts_s, replies = sliced
    replies.append((2, {"msg_type": "status"}))
    assert asyncio.run(get_msg(object()))["msg_type"] == "status"
    assert asked_timeouts_s == [shell_poll.SLICE_S] * 2


def test_installing_twice_wraps_once(sliced):
    get_msg, _, _ = sliced
    shell_poll.install()
    assert AsyncZMQSocketChannel.get_msg is get_msg
