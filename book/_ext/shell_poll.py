"""Poll a kernel's reply in short slices when a notebook is executed by nbclient.

nbclient waits for a cell's execute reply with one zmq poll that lasts the whole cell timeout.
When the reply arrives while nbclient is sending an ipywidgets Output widget's state to the
kernel on the same socket, that poll misses the wake-up and returns only when the timeout ends:
each cell with a live calculator then cost the full ``execute: timeout`` of _config.yml (600 s)
and finished without an error. Seen here with nbclient 0.11, jupyter_client 8.10, pyzmq 27 and
ipykernel 6.30 and 7.4 (a cell that opens an Output widget with ``clear_output(wait=True)``).
Polling in slices of at most ``SLICE_S`` bounds that loss; the overall deadline is unchanged.

Used by scripts/run_notebooks.py (every execution the tests and the website read) and
scripts/standalone_notebooks.py (which runs this file's source before its own code).
"""

from __future__ import annotations

import time
from queue import Empty

SLICE_S = 0.25


def install() -> None:
    """Make every asyncio kernel channel of jupyter_client poll in slices (idempotent)."""
    from jupyter_client.channels import AsyncZMQSocketChannel

    poll_once = AsyncZMQSocketChannel.get_msg
    if getattr(poll_once, "polls_in_slices", False):
        return

    async def get_msg(self, timeout=None):
        deadline_s = None if timeout is None else time.monotonic() + timeout
        while True:
            left_s = SLICE_S if deadline_s is None else max(0.0, deadline_s - time.monotonic())
            try:
                return await poll_once(self, min(SLICE_S, left_s))
            except Empty:
                if deadline_s is not None and time.monotonic() >= deadline_s:
                    raise

    get_msg.polls_in_slices = True
    AsyncZMQSocketChannel.get_msg = get_msg
