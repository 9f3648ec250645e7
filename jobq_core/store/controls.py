"""What both stores keep in memory about queue controls, to pick the claim's shape.

Both shapes of a claim on every queue enforce every control from the rows they read; they
differ in cost. The plain one scans the pending jobs of all queues in claim order and
leaves out the queues that have controls (a paused or limited queue is claimed from by
its own arm, or not at all): cheapest, but it would step over every pending job of a
controlled queue that is ahead in that order. So while some controlled queue has pending
jobs (``busy``), claims take the per-queue shape instead: one bounded seek per queue with
pending jobs, each within the queue's room. The names of the limited queues tell the
PostgreSQL store which rows to lock before a claim (see its ``LOCK_LIMITED``).

A queue with a key limit (``key_concurrency`` or ``ordered``) is limited too, and its
names are also in ``keyed``: only a claim that may start its jobs takes the *keyed* shape,
whose scan carries the per-key filter, so a claim that touches no such queue pays nothing
for keys. A non-keyed shape gives a queue whose row has key limits no room at all (the
claim's ``claim.room``), so a stale state (a queue keyed since it was read) leaves the
queue out for at most ``TTL`` seconds, never overruns a key.

The state is read again at most every ``TTL`` seconds, and at once after this store
changed a control. A stale state is safe: a queue controlled since it was read is left
out of the plain claim, never overrun, and is claimed from again within ``TTL`` seconds.
One staleness would be slow: jobs enqueued into a controlled queue that had none (the
first payment after a quiet night, on a rate-limited queue) would wait up to ``TTL`` for
the plain claim to give way. So after a plain claim that found fewer jobs than it asked
for while some queue has controls (``claimed``), the next claim reads the state again once
it is ``RECHECK`` seconds old: an idle worker woken by those jobs starts them at once, and
a worker that keeps finding too little reads it at most ``1 / RECHECK`` times a second.
"""
from __future__ import annotations

import time
from collections.abc import Callable
from typing import NamedTuple

TTL = 1.0
RECHECK = 0.02


class Controls(NamedTuple):
    limited: tuple[str, ...]  # queues with a concurrency, rate or key limit (not paused)
    busy: bool  # some paused or limited queue has pending jobs
    controlled: bool  # some queue is paused or limited
    keyed: tuple[str, ...] = ()  # queues with a key limit (not paused)

    def keyed_claim(self, queues: list[str], per_queue: bool) -> bool:
        """Whether a claim of ``queues`` (none: every queue, ``per_queue`` or plain) may
        start jobs of a queue with key limits: then it takes the keyed shape."""
        if not self.keyed:
            return False
        if queues:
            return any(q in self.keyed for q in queues)
        return per_queue


class ControlCache:
    def __init__(self) -> None:
        self._state = Controls((), False, False, ())
        self._read_at = float("-inf")  # monotonic time of the last read
        self._short = False  # the last plain claim found fewer jobs than it asked for

    def get(self, read: Callable[[], list[tuple[str, bool, bool, bool]]]) -> Controls:
        """The state, from ``read()`` (on the caller's connection: rows of CONTROL_STATE,
        ``(name, limited, has pending jobs, keyed)``) when it is due."""
        now = time.monotonic()
        age = now - self._read_at
        if age >= TTL or (age >= RECHECK and self._short and self._state.controlled
                          and not self._state.busy):
            rows = read()
            self._state = Controls(tuple(r[0] for r in rows if r[1]),
                                   any(r[2] for r in rows), bool(rows),
                                   tuple(r[0] for r in rows if r[3]))
            self._read_at, self._short = now, False
        return self._state

    def claimed(self, asked: int, found: int) -> None:
        """A claim on every queue of the plain shape found ``found`` of ``asked`` jobs."""
        self._short = found < asked

    def forget(self) -> None:
        """Read again before the next claim (this store changed a control)."""
        self._read_at = float("-inf")
