"""The step loop of a continuous-batching engine, as vLLM's scheduler runs it, in pure Python:
what :func:`lab_utils.replica.simulate` runs (read that module's docstring for the model).

Each step: the running sequences past their prompt decode (each a token, or a speculative verify
step); a decode that needs a new KV block and finds none preempts the sequence admitted last
(recompute: its blocks are freed and it waits again at the head of the queue). The token budget
left goes to the prompts part-way through, then to waiting requests while fewer than
``max_num_seqs`` run and blocks are free. Without chunked prefill a step prefills whole prompts
and the decodes wait (vLLM's older scheduler).

Decodes are kept in aggregate, so a step costs the same whatever the batch: every decoding
sequence gains ``gain`` tokens a decode step, so a sequence's tokens follow from the decode
steps since it joined (``g0``), the batch's total context is one running sum, and the steps at
which a sequence needs its next block or finishes wait in two heaps. Runs of decode-only steps
that take the same time (nothing arrives, needs a block or finishes, and the mean context stays
in its bucket) are taken at once. A decode-only step then goes on, in one loop, through the
decode-only steps after it while nothing but blocks change (nothing finishes or arrives, and
the free blocks cover what the decodes need, so no prompt can start and none is preempted):
the same runs, the same sums of the clock and the context, so the same answers to the last bit,
without scheduling prompts between them. With a gain of one token a step (no speculative
decoding) a sequence due a block has filled its last one exactly: it takes one, and its next is
``block_size`` steps on.
"""

from __future__ import annotations

import collections
import functools
import heapq
import math

from lab_utils import checks

__all__ = ["Request", "Scheduler", "requests_from"]


def _rounded(mean: float, bucket: int) -> int:
    """``mean`` in whole ``bucket``s, to the nearest."""
    return math.floor(mean / bucket + 0.5)


class Request:
    """One request's state in the scheduler (times in seconds of the simulated clock)."""

    __slots__ = (
        "index",
        "arrival_s",
        "ready_s",
        "prompt",
        "output",
        "prefix",
        "computed",
        "target",
        "made",
        "blocks",
        "first_s",
        "scheduled_s",
        "preemptions",
        "finish_s",
        "g0",
        "version",
    )

    def __init__(self, index, arrival_s, ready_s, prompt, output, prefix):
        self.index, self.arrival_s, self.ready_s = index, arrival_s, ready_s
        self.prompt, self.output, self.prefix = prompt, output, prefix
        self.computed = prefix  # tokens in the KV cache (the shared prefix is found there)
        self.target = prompt  # tokens to compute before the next token is sampled
        self.made = 0.0  # output tokens made (fractional under speculative decoding)
        self.blocks = 0  # KV blocks of its own (the shared prefix's are counted once)
        self.first_s = self.scheduled_s = self.finish_s = None
        self.preemptions = 0
        self.g0 = 0  # decode steps done when it started decoding (computed and made are as of then)
        self.version = 0  # bumped when it stops decoding: its heap entries expire


def requests_from(requests, per_request_s, prefix_hit, block_size) -> list[Request]:
    """``requests`` ((arrival_s, prompt_tokens, output_tokens) each) as :class:`Request`s: each
    ready ``per_request_s`` after its arrival, its prefix hit rounded down to whole blocks (at
    least one prompt token is computed)."""
    made = []
    for index, item in enumerate(checks.sequence("requests", requests)):
        if len(item) != 3:
            raise ValueError(f"requests[{index}]={item!r}: give (arrival_s, prompt_tokens, output_tokens)")
        arrival, prompt, output = item[0], item[1], item[2]
        plain = type(arrival) is float and 0.0 <= arrival < math.inf  # as the checks pass it, unnamed
        if not (plain and type(prompt) is int and prompt >= 1 and type(output) is int and output >= 1):
            arrival = checks.number(f"requests[{index}] arrival_s", arrival, strict=False)
            prompt = checks.count(f"requests[{index}] prompt_tokens", prompt)
            output = checks.count(f"requests[{index}] output_tokens", output)
        prefix = min((math.floor(prefix_hit * prompt) // block_size) * block_size, prompt - 1)
        made.append(Request(index, arrival, arrival + per_request_s, prompt, output, prefix))
    if not made:
        raise ValueError("requests is empty: give at least one (arrival_s, prompt_tokens, output_tokens)")
    return made


class Scheduler:
    """The scheduler's state and its step loop. ``timer(decodes, mean_context, chunks)`` gives a
    step's seconds (``chunks``: (request, prompt tokens) pairs); ``spec``: (tokens a decode
    computes in a step, tokens it keeps on average); ``closed``: (per_request_s, a deque of the
    requests left to send) for a closed loop."""

    def __init__(
        self,
        timer,
        capacity_blocks,
        block_size,
        budget,
        max_seqs,
        chunked,
        spec,
        closed=None,
        context_bucket=1,
    ):
        self.timer, self.capacity, self.block_size = timer, capacity_blocks, block_size
        self.context_bucket = context_bucket  # the timer's: a step's time changes only across buckets
        self.decode_s: dict[tuple[int, int], float] = {}  # a decode-only step's seconds
        self.budget, self.max_seqs, self.chunked = budget, max_seqs, chunked
        self.decode_tokens, self.gain = spec
        self.closed = closed
        self.free = capacity_blocks
        self.running: dict[int, Request] = {}  # in admission order: preemption takes the last
        self.prefilling: dict[int, Request] = {}  # the running ones part-way through a prompt
        self.decoding: dict[int, Request] = {}
        self.context = 0.0  # the decoding sequences' tokens in the cache, summed
        self.block_due: list = []  # (decode steps done when it needs a block, index, version, request)
        self.finish_due: list = []  # (decode steps done when it has made its output, ...)
        self.waiting: collections.deque[Request] = collections.deque()
        self.arrivals: list = []
        self.clock, self.steps, self.decode_steps, self.preemptions = 0.0, 0, 0, 0

    # --- a decoding sequence's tokens, from the decode steps since it joined -------------------

    def _computed(self, request: Request) -> float:
        """A decoding sequence's tokens in the cache."""
        return request.computed + self.gain * (self.decode_steps - request.g0)

    def _tokens(self, request: Request) -> tuple[float, float]:
        """A decoding sequence's (tokens in the cache, output tokens made)."""
        made = request.made + self.gain * (self.decode_steps - request.g0)
        return self._computed(request), min(request.output, made)

    def _join(self, request: Request) -> None:
        """``request`` (its prompt done, a token made) decodes from the next step."""
        request.g0 = self.decode_steps
        self.decoding[request.index] = request
        self.context += request.computed
        finish = request.g0 + math.ceil((request.output - request.made) / self.gain - 1e-9)
        heapq.heappush(self.finish_due, (finish, request.index, request.version, request))
        self._schedule_block(request)

    def _schedule_block(self, request: Request) -> None:
        room = request.prefix + request.blocks * self.block_size - self._computed(request)
        due = self.decode_steps + max(0, math.floor(room / self.gain + 1e-9))
        heapq.heappush(self.block_due, (due, request.index, request.version, request))

    def _leave(self, request: Request) -> None:
        """``request`` stops decoding (finished or preempted): its tokens as of now."""
        request.computed, request.made = self._tokens(request)
        request.version += 1
        del self.decoding[request.index]
        self.context -= request.computed

    # --- blocks and preemption --------------------------------------------------------------

    def _short(self, request: Request, tokens: float) -> int:
        """Blocks ``request`` lacks to hold ``tokens`` in its cache (0 or less: none)."""
        return math.ceil((tokens - request.prefix) / self.block_size) - request.blocks

    def _grow(self, request: Request, tokens: float) -> bool:
        """Give ``request`` the blocks ``tokens`` in its cache need; False when there are none."""
        need = self._short(request, tokens)
        if need > self.free:
            return False
        if need > 0:
            self.free -= need
            request.blocks += need
        return True

    def _preempt(self, request: Request) -> None:
        if request.index in self.decoding:
            self._leave(request)
        self.prefilling.pop(request.index, None)
        del self.running[request.index]
        self.free += request.blocks
        request.blocks, request.computed = 0, request.prefix
        request.target = request.prompt + math.floor(request.made)  # recompute what it had made
        request.preemptions += 1
        self.preemptions += 1
        self.waiting.appendleft(request)

    def _make_room(self, request: Request, tokens: float) -> bool:
        """Blocks for ``request`` to hold ``tokens``, preempting the latest admitted while they
        run short; False when ``request`` itself was preempted."""
        while not self._grow(request, tokens):
            self._preempt(next(reversed(self.running.values())))
            if request.index not in self.running:
                return False
        return True

    def _grow_decodes(self, preempt: bool = True) -> bool:
        """Each decoding sequence whose next tokens need a block gets one, preempting the latest
        admitted while none is free; with ``preempt`` False it stops there instead (False)."""
        while self.block_due and self.block_due[0][0] <= self.decode_steps:
            _, _, version, request = self.block_due[0]
            if version == request.version and request.index in self.decoding:
                tokens = self._computed(request) + self.gain
                if not preempt and self._short(request, tokens) > self.free:
                    return False
                heapq.heappop(self.block_due)
                if self._make_room(request, tokens):
                    self._schedule_block(request)
            else:
                heapq.heappop(self.block_due)
        return True

    def _grow_unit_decodes(self) -> bool:
        """:meth:`_grow_decodes` without preempting, when every decode makes one token a step
        (gain 1): a sequence due a block has filled its last one exactly, so it needs one, and
        its next ``block_size`` steps on."""
        block_due, decoding = self.block_due, self.decoding
        while block_due and block_due[0][0] <= self.decode_steps:
            due, index, version, request = block_due[0]
            if version != request.version or index not in decoding:
                heapq.heappop(block_due)
            elif self.free < 1:
                return False
            else:
                self.free -= 1
                request.blocks += 1
                heapq.heapreplace(block_due, (due + self.block_size, index, version, request))
        return True

    # --- prompts ---------------------------------------------------------------------------

    def _chunks(self, budget: int) -> list[tuple[Request, int]]:
        """Prompt tokens this step computes: the running prompts first, then waiting requests."""
        chunks = []
        for request in list(self.prefilling.values()) if self.prefilling else ():
            if budget <= 0:
                break
            tokens = min(request.target - request.computed, budget)
            if request.index in self.prefilling and self._make_room(request, request.computed + tokens):
                chunks.append((request, tokens))
                budget -= tokens
        while self.waiting and budget > 0 and len(self.running) < self.max_seqs:
            request = self.waiting[0]
            if request.ready_s > self.clock:
                break
            tokens = request.target - request.computed
            if self.chunked:
                tokens = min(tokens, budget)
            elif tokens > budget and chunks:
                break
            if not self._grow(request, request.computed + tokens):
                break
            self.waiting.popleft()
            self.running[request.index] = self.prefilling[request.index] = request
            if request.scheduled_s is None:
                request.scheduled_s = self.clock
            chunks.append((request, tokens))
            budget -= tokens
        return chunks

    # --- the step ----------------------------------------------------------------------------

    def step(self) -> bool:
        """One step; False when nothing could be scheduled. A decode-only step goes on through
        the decode-only steps alike after it (:meth:`_decode_only`)."""
        if self.chunked:
            if self.block_due and self.block_due[0][0] <= self.decode_steps:  # else nothing to grow
                self._grow_decodes()
            chunks = self._chunks(self.budget - len(self.decoding) * self.decode_tokens)
            n = len(self.decoding)
        else:  # a prefill step when a prompt can start, else a decode step
            chunks = self._chunks(self.budget)
            if not chunks:
                self._grow_decodes()
            n = 0 if chunks else len(self.decoding)
        if not n and not chunks:
            return False
        if chunks:
            self._advance(1, self.timer(n, self._bucketed(n), chunks), n)
            self._prefilled(chunks)
        else:
            self._decode_only(n)
        return True

    def _bucketed(self, n: int) -> int:
        """The context the timer prices ``n`` decodes at: their mean to the nearest
        ``context_bucket`` tokens, at least 1 (0 for no decodes)."""
        return max(1, _rounded(self.context / n, self.context_bucket) * self.context_bucket) if n else 0

    def _advance(self, repeat: int, seconds: float, n: int) -> None:
        """``repeat`` steps of ``seconds`` in which ``n`` sequences decode; those that made
        their output finish."""
        self.clock += repeat * seconds
        self.steps += repeat
        if n:
            self.decode_steps += repeat
            self.context += self.gain * n * repeat
            self._finish_due()

    def _finish_due(self) -> None:
        while self.finish_due and self.finish_due[0][0] <= self.decode_steps:
            _, _, version, request = heapq.heappop(self.finish_due)
            if version == request.version and request.index in self.decoding:
                self._leave(request)
                self._finish(request)

    def _prefilled(self, chunks: list[tuple[Request, int]]) -> None:
        """The prompt tokens of ``chunks`` are in the cache: a prompt done samples its first token
        (the last position samples) and decodes from the next step, or finishes."""
        for request, tokens in chunks:
            request.computed += tokens
            if request.computed >= request.target:
                del self.prefilling[request.index]
                if request.first_s is None:
                    request.first_s = self.clock
                request.made = min(request.output, math.floor(request.made) + 1.0)
                if request.made >= request.output:
                    self._finish(request)
                else:
                    self._join(request)

    def _decode_time(self, n: int, context: int) -> float:
        """The timer's seconds of a decode-only step, kept by (decodes, context)."""
        key = (n, context)
        if key not in self.decode_s:
            self.decode_s[key] = self.timer(n, context, ())
        return self.decode_s[key]

    def _decode_only(self, n: int) -> None:
        """Decode-only steps of ``n`` sequences, from this one on while the next would be one
        alike: nothing finished, nothing arrived and the free blocks cover what the decodes need
        next (so nothing is preempted, and no prompt can start: the free blocks only shrink).
        Taken as :meth:`step` would take them one by one, with the same sums, in runs of steps
        alike (same time): a run ends where a sequence needs a block or finishes, the mean
        context crosses into the next bucket, or a request arrives. Between runs the blocks due
        are granted (:meth:`_grow_decodes`, stopping where it would preempt), and the time asked
        again when the bucket changed."""
        gain, bucket, block_due, step_tokens = self.gain, self.context_bucket, self.block_due, self.gain * n
        finish = self.finish_due[0][0] if self.finish_due else math.inf  # none join: fixed
        arrival = self.arrivals[0][0] if self.arrivals else None  # none finish: fixed
        clock, steps, done, total = self.clock, self.steps, self.decode_steps, self.context
        grow = (
            self._grow_unit_decodes if gain == 1.0 else functools.partial(self._grow_decodes, preempt=False)
        )
        ceil, rounded, seconds = math.ceil, None, 0.0
        while True:
            mean = total / n
            was, rounded = rounded, _rounded(mean, bucket)
            if rounded != was:  # into another bucket: ask its time
                seconds = self._decode_time(n, max(1, rounded * bucket))
            run = ceil(((rounded + 0.5) * bucket - mean) / gain - 1e-9)  # to the next bucket
            if finish - done < run:
                run = finish - done
            if block_due and block_due[0][0] - done < run:
                run = block_due[0][0] - done
            if arrival is not None and seconds > 0:
                wait = ceil((arrival - clock) / seconds - 1e-12)
                run = wait if wait < run else run
            run = run if run > 1 else 1
            clock += run * seconds
            total += step_tokens * run
            steps, done = steps + run, done + run
            if done >= finish or (arrival is not None and arrival <= clock):
                break
            if block_due and block_due[0][0] <= done:
                self.decode_steps = done  # what the growth reads
                if not grow():
                    break
        self.clock, self.steps, self.decode_steps, self.context = clock, steps, done, total
        self._finish_due()

    def _finish(self, request: Request) -> None:
        request.finish_s = self.clock
        del self.running[request.index]
        self.free += request.blocks
        if self.closed is not None and self.closed[1]:
            newcomer = self.closed[1].popleft()
            newcomer.arrival_s, newcomer.ready_s = self.clock, self.clock + self.closed[0]
            heapq.heappush(self.arrivals, (newcomer.ready_s, newcomer.index, newcomer))

    def run(self, pending: list[Request]) -> None:
        """Steps until every request is done; idle time jumps to the next arrival."""
        self.arrivals = arrivals = [(r.ready_s, r.index, r) for r in pending]
        heapq.heapify(arrivals)
        while arrivals or self.waiting or self.running:
            while arrivals and arrivals[0][0] <= self.clock:
                self.waiting.append(heapq.heappop(arrivals)[2])
            if not self.running and not (self.waiting and self.waiting[0].ready_s <= self.clock):
                upcoming = [r.ready_s for r in self.waiting] + [arrivals[0][0]] * bool(arrivals)
                self.clock = max(self.clock, min(upcoming))
                continue
            if not self.step():
                head = self.waiting[0]
                raise ValueError(
                    f"a request of {head.target} tokens needs more KV cache than the replica holds "
                    f"({self.capacity * self.block_size} tokens)"
                )
