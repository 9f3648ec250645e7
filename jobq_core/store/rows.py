"""How database rows become jobq's records, for every store: a ``Job`` from a row (below),
and the records built from several rows (attempts, stats, throughput; at the end).

Reading a job is on the hot path of every claim, so the readers are built for speed:
``Job`` is frozen, so its ``__init__`` sets each field through ``object.__setattr__``. A
reader instead fills an instance of ``_Unfrozen`` (``Job``'s slots, no freeze), one unrolled
line per field generated from ``Job``'s own field names (so they cannot fall out of step
with it), then makes it a ``Job`` by assigning ``__class__`` (allowed: the two classes have
the same slot layout). The result is a plain frozen ``Job``.

What it saves, measured by ``bench/row_readers.py --instructions`` (instructions a claimed
row): 9,447 for this reader, against 22,471 for the previous one, which called each slot's
``__set__`` (a C call with an argument tuple per field), and 41,233 for ``Job(*fields)``.

A store gives each reader the order of the fields in its rows; payload and result are
JSON text, status the status's name, cancel_requested anything ``bool`` takes.
"""
from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from ..types import (
    Attempt, Job, JobStatus, Outcome, QueueStats, Rate, RawJSON, Stats, Throughput,
)
from ..common.declared import declarations
from .dbapi import Row

# What a claim sets itself, so its RETURNING need not send it back (each returned column
# costs time in the database and in Python): the reader takes these from its arguments.
SET_BY_CLAIM = {
    "status": "_RUNNING", "lease_until": "lease_until", "worker": "worker",
    "started_at": "now", "heartbeat_at": "now", "progress": "None", "progress_message": "None",
}
CLAIM_FIELDS = [name for name in Job.__slots__ if name not in SET_BY_CLAIM]
"""The fields a claim's RETURNING list holds, in this order (``claimed_job`` reads them)."""


def worker_children(value: object) -> tuple[tuple[int, str, int | None], ...] | None:
    """A registry entry's children, as stored (a JSON list of [pid, state, job id]); None
    when the worker recorded none, or the value is not that shape (another program)."""
    if not isinstance(value, list):
        return None
    out = []
    for item in value:
        if not (isinstance(item, list) and len(item) == 3 and type(item[0]) is int
                and isinstance(item[1], str) and (item[2] is None or type(item[2]) is int)):
            return None
        out.append((item[0], item[1], item[2]))
    return tuple(out)


_NUMBER = (int, float)
_KINDS = {"priority": (int,), "attempts": (int,), "max_attempts": (int,), "run_at": _NUMBER}


def unreadable(**values: object) -> str | None:
    """What is wrong with the columns named (None: nothing). SQLite stores any value in
    any column, and another program may have written one jobq cannot work with."""
    for name, value in values.items():
        if type(value) not in _KINDS[name]:
            wanted = "an integer" if _KINDS[name] == (int,) else "a number"
            return f"column {name} holds {value!r:.60}, not {wanted}"
    return None


# the C scanner that json.loads ends up calling: (value, index after it) from (text, index).
# JSONDecoder.__init__ sets it (json.scanner.make_scanner(self)); typeshed does not declare
# the attribute.
_scan: Callable[[str, int], tuple[Any, int]]
_scan = json.JSONDecoder().scan_once  # type: ignore[attr-defined]


def decode(text: str | None) -> Any:  # a JSON value, like json.loads's
    """JSON text to a value; text that is not JSON (written by something other than jobq)
    comes back as ``RawJSON``.

    jobq writes compact JSON, which the C scanner reads whole in one call; ``json.loads``
    wraps that call in type checks, a decoder lookup and two whitespace regex matches, 4x
    the scanner's own time for a small payload (``bench/decode_ab.py``). Anything else
    (whitespace around the value, text that is not JSON, bytes) takes ``json.loads``."""
    if text is None:
        return None
    try:
        value, end = _scan(text, 0)
        if end == len(text):
            return value
    except (StopIteration, ValueError, RecursionError, TypeError):
        pass
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return RawJSON(text)


STATUS_BY_NAME = {s.value: s for s in JobStatus}
"""A stored status's text to its ``JobStatus``; a status jobq does not know (another
program wrote it) is not in it, and readers keep the raw text."""
_STATUS = STATUS_BY_NAME
# A status jobq does not know (another program wrote it) is kept as the raw text.
_CONVERT = {"payload": "_decode({})", "status": "_STATUS.get({0}, {0})", "result": "_decode({})",
            "cancel_requested": "bool({})"}


class _Unfrozen:
    """``Job``'s slot layout without the freeze: what a reader fills before it becomes a Job."""

    __slots__ = Job.__slots__


def _reader(fields: list[str], fixed: dict[str, str], args: str) -> Callable[..., Job]:
    """``def read(r, <args>)``: a Job from row ``r`` holding ``fields`` in order, with the
    other fields set to the expressions in ``fixed``."""
    env: dict[str, Any] = {"_decode": decode, "_STATUS": _STATUS, "_RUNNING": JobStatus.RUNNING,
           "_new": object.__new__, "_Unfrozen": _Unfrozen, "Job": Job}
    lines = [f"def read(r{', ' if args else ''}{args}):", "    j = _new(_Unfrozen)"]
    for name in Job.__slots__:
        value = fixed.get(name) or _CONVERT.get(name, "{}").format(f"r[{fields.index(name)}]")
        lines.append(f"    j.{name} = {value}")
    lines += ["    j.__class__ = Job", "    return j"]
    exec("\n".join(lines), env)  # noqa: S102 - built from Job's own field names only
    read: Callable[..., Job] = env["read"]  # the function exec just defined from ``lines``
    return read


job_from_row: Callable[[Row], Job] = _reader(list(Job.__slots__), {}, "")
"""A Job from a row holding every field of ``Job`` in its order."""

claimed_job: Callable[[Row, float, str, float], Job] = _reader(
    CLAIM_FIELDS, SET_BY_CLAIM, "lease_until, worker, now")
"""A Job from a claim's row of ``CLAIM_FIELDS``: ``claimed_job(row, lease_until, worker, now)``."""


# -- records built from several rows (the reads are in ``store.statements``) ------------------


def attempts_from_rows(job_id: int, ended: Iterable[Row], current: Row | None) -> list[Attempt]:
    """``job_attempts``: the ended attempts, then the running or succeeded one the job row
    describes (see the History rule in ``store.base``)."""
    out = [Attempt(r[0], r[1], r[2], r[3], r[4], r[5], Outcome(r[6]), r[7]) for r in ended]
    if current:
        attempt, worker, token, started, finished, status = current
        outcome = Outcome.RUNNING if status == JobStatus.RUNNING else Outcome.SUCCEEDED
        out.append(Attempt(job_id, attempt, worker, token, started, finished, outcome, None))
    return out


def controls_from_row(row: Row | None, running: int = 0) -> QueueStats:
    """A row of QUEUE_STATE (paused, concurrency, rate limit, rate window, window start,
    window count, key concurrency, ordered) as QueueStats carrying the controls (and
    ``running``, when given); None (a queue without controls): none of them."""
    if row is None:
        return QueueStats(running=running)
    (paused, concurrency, rate_limit, rate_per, window_start, window_count, key_concurrency,
     ordered) = row
    return QueueStats(running=running, paused=bool(paused), concurrency=concurrency,
                      rate=None if rate_limit is None else Rate(rate_limit, rate_per),
                      key_concurrency=key_concurrency, ordered=bool(ordered),
                      window_start=window_start, window_count=window_count or 0)


def controls_from_rows(rows: Iterable[Row]) -> dict[str, QueueStats]:
    """Rows of QUEUE_CONTROLS (name, then QUEUE_STATE's columns) as QueueStats carrying
    only the controls."""
    return {row[0]: controls_from_row(row[1:]) for row in rows}


def stats_from_rows(now: float, window: float, pending_rows: Iterable[Row],
                    running_rows: Iterable[Row], dead_rows: Iterable[Row],
                    recent: Mapping[str, int], control_rows: Iterable[Row] = (),
                    waiting_rows: Iterable[Row] = (),
                    declared_rows: Iterable[Row] = ()) -> Stats:
    """``stats``: the four reads of ``statements.stats_reads``, added up per queue and in
    all, with each queue's controls (rows of QUEUE_CONTROLS) and the limits its code
    declares (rows of DECLARED)."""
    queues: dict[str, dict[str, Any]] = {}  # QueueStats's keyword arguments, per queue
    pending = scheduled = retrying = 0
    oldest: float | None = None
    for q, n, sched, retry, first, held in pending_rows:
        queues.setdefault(q, {}).update(pending=n, oldest_pending_at=first, held=held or 0)
        pending, scheduled, retrying = pending + n, scheduled + sched, retrying + retry
        if first is not None and (oldest is None or first < oldest):
            oldest = first
    running = expired = 0
    for q, n, exp, keys in running_rows:
        queues.setdefault(q, {}).update(running=n, keys_busy=keys)
        running, expired = running + n, expired + exp
    dead = 0
    for q, n in dead_rows:
        queues.setdefault(q, {})["dead"] = n
        dead += n
    waiting = 0
    for q, n in waiting_rows:
        queues.setdefault(q, {})["waiting"] = n
        waiting += n
    for q, control in controls_from_rows(control_rows).items():
        queues.setdefault(q, {}).update(paused=control.paused, concurrency=control.concurrency,
                                        rate=control.rate, ordered=control.ordered,
                                        key_concurrency=control.key_concurrency,
                                        window_start=control.window_start,
                                        window_count=control.window_count)
    for q, limits in declarations({str(k): str(v) for k, v in declared_rows}).items():
        queues.setdefault(q, {})["declared"] = limits
    return Stats(
        now=now, window=window, pending=pending, scheduled=scheduled, retrying=retrying,
        running=running, dead=dead, succeeded_recent=recent.get("succeeded", 0),
        dead_recent=recent.get("dead", 0), cancelled_recent=recent.get("cancelled", 0),
        expired_leases=expired, oldest_pending_at=oldest,
        queues={q: QueueStats(**v) for q, v in sorted(queues.items())}, waiting=waiting,
    )


THROUGHPUT_FAILED = (Outcome.FAILED, Outcome.LEASE_EXPIRED, Outcome.LEASE_LOST)
"""The attempt outcomes ``job_throughput`` counts as failed."""


def throughput_from_rows(start: float, bucket: float, buckets: int,
                         rows: Iterable[Row]) -> Throughput:
    """``job_throughput``: rows of (``succeeded``, ``dead`` or ``failed``, bucket number,
    count) into per-bucket counts; buckets outside the span are dropped."""
    counts = {s: [0] * buckets for s in ("succeeded", "dead", "failed")}
    for status, b, n in rows:
        if 0 <= b < buckets:
            counts[status][b] += n
    return Throughput(start, bucket, tuple(counts["succeeded"]), tuple(counts["failed"]),
                      tuple(counts["dead"]))
