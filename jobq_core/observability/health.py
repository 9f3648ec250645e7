"""Health checks: whether a worker process is alive (``liveness``: its claim loop and its
heartbeat still turn) and whether the database is ready for it (``readiness``: it answers
and its jobq schema is the one this jobq writes). A worker's metrics port serves them as
``/healthz`` and ``/readyz``; ``jobq health`` runs the second from a shell.

Liveness says nothing about the database: while PostgreSQL is down a worker's loops keep
turning (each statement fails after the busy timeout and is tried again), and restarting
the process would not help. A loop that has not turned for ``STUCK`` seconds, longer than
any statement waits, is stuck: restarting it does help.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..errors import JobqError, SchemaOutdated

if TYPE_CHECKING:
    from ..queue import Queue
    from ..worker import Worker

STUCK = 90.0  # seconds without a turn of a loop: a worker stuck (the busy timeout is 30)


@dataclass(frozen=True, slots=True)
class Health:
    ok: bool
    checks: dict[str, dict[str, Any]] = field(default_factory=dict)

    def json(self) -> dict[str, Any]:
        return {"status": "ok" if self.ok else "fail", "checks": self.checks}


def liveness(worker: Worker, stuck: float = STUCK) -> Health:
    """Whether ``worker``'s claim loop and heartbeat turned within ``stuck`` seconds (a
    worker not started yet, or stopping, is alive)."""
    now = time.monotonic()
    checks: dict[str, dict[str, Any]] = {}
    for name, at in (("claim_loop", worker.looped_at), ("heartbeat", worker.beat_at)):
        age = None if at == 0.0 else round(now - at, 3)
        checks[name] = {"ok": age is None or age < stuck, "seconds_since": age}
    checks["worker"] = {"ok": True, "id": worker.id, "stopping": worker.stopping,
                        "leader": worker.leading}
    return Health(all(c["ok"] for c in checks.values()), checks)


def readiness(queue: Queue) -> Health:
    """Whether the database answers (one read) and has the schema this jobq writes."""
    started = time.monotonic()
    try:
        installed, newest = queue.schema_version()
    except SchemaOutdated as e:  # (a store opened with migrate=False, on its first use)
        return outdated(e)
    except JobqError as e:
        return Health(False, {"database": {"ok": False, "error": str(e)[:500]}})
    took = round((time.monotonic() - started) * 1000, 1)
    schema: dict[str, Any] = {"ok": installed == newest, "installed": installed,
                              "newest": newest}
    if installed < newest:
        schema["error"] = "the schema is older than this jobq's: run `jobq migrate`"
    elif installed > newest:
        schema["error"] = "the schema is newer than this jobq's: upgrade jobq"
    return Health(schema["ok"], {"database": {"ok": True, "took_ms": took}, "schema": schema})


def outdated(e: SchemaOutdated) -> Health:
    """Readiness when opening the store refused an older schema."""
    return Health(False, {"database": {"ok": True}, "schema": {
        "ok": False, "installed": e.installed, "newest": e.newest, "error": str(e)[:500]}})
