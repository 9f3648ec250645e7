"""How rows of ``jobq_jobs`` become ``Job`` records.

Reading a job is on the hot path of every claim, so the readers are built for speed:
``Job`` is frozen, and its ``__init__`` sets each field through ``object.__setattr__``,
which costs more than the rest of a claim's Python work. The readers set the slots
directly, one unrolled line per field, generated from ``Job``'s own field names.

Measured against the plain ``Job(*values)`` (``jobq bench --only drain``, 1 process,
median of 3 alternating runs): the API drain is 10 % faster (0.906x without), and a
drained job costs 18.5 % fewer instructions (callgrind, 2,000 jobs).
"""
from __future__ import annotations

import json
from collections.abc import Callable

from ...types import Job, JobStatus, RawJSON

_PAYLOAD = "coalesce(payload, (SELECT p.payload FROM jobq_payloads p WHERE p.job_id=jobq_jobs.id))"
# Column expressions by Job field. A payload too big for the row lives in jobq_payloads.
_COLUMNS = {name: name for name in Job.__slots__} | {"payload": _PAYLOAD}

JOB_COLS = ", ".join(_COLUMNS[name] for name in Job.__slots__)
# The same columns with payload and result left unread: listings never load what they
# do not show (a payload may be megabytes).
JOB_COLS_LEAN = ", ".join("NULL" if name in ("payload", "result") else _COLUMNS[name]
                          for name in Job.__slots__)

# What a claim sets itself, so its RETURNING need not send it back (each returned column
# costs time in SQLite and in Python): the reader takes these from its arguments.
_SET_BY_CLAIM = {
    "status": "_RUNNING", "lease_until": "lease_until", "worker": "worker",
    "started_at": "now", "heartbeat_at": "now", "progress": "None", "progress_message": "None",
}
_CLAIM_FIELDS = [name for name in Job.__slots__ if name not in _SET_BY_CLAIM]
# The RETURNING list of the claim statement, read by ``claimed_job``.
CLAIM_RETURNING = ", ".join(_COLUMNS[name] for name in _CLAIM_FIELDS)


def decode(text: str | None):
    """JSON text to a value; text that is not JSON (written by something other than jobq)
    comes back as ``RawJSON``."""
    if text is None:
        return None
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return RawJSON(text)


_NUMBER = (int, float)
_KINDS = {"priority": (int,), "attempts": (int,), "max_attempts": (int,), "run_at": _NUMBER}


def unreadable(**values) -> str | None:
    """What is wrong with the columns named (None: nothing) — SQLite stores any value in
    any column, and another program may have written one jobq cannot work with."""
    for name, value in values.items():
        if type(value) not in _KINDS[name]:
            wanted = "an integer" if _KINDS[name] == (int,) else "a number"
            return f"column {name} holds {value!r:.60}, not {wanted}"
    return None


def text(raw: bytes) -> str:
    """Text columns that are not valid UTF-8 (written by something other than jobq) are
    read with U+FFFD in place of the bad bytes, instead of failing the whole query."""
    return str(raw, "utf-8", "replace")


_STATUS = {s.value: s for s in JobStatus}
_CONVERT = {"payload": "_decode({})", "status": "_STATUS[{}]", "result": "_decode({})",
            "cancel_requested": "bool({})"}


def _reader(fields: list[str], fixed: dict[str, str], args: str) -> Callable[..., Job]:
    """``def read(r, <args>)``: a Job from row ``r`` holding ``fields`` in order, with the
    other fields set to the expressions in ``fixed``."""
    env = {"_decode": decode, "_STATUS": _STATUS, "_RUNNING": JobStatus.RUNNING,
           "_new": object.__new__, "Job": Job}
    lines = [f"def read(r{', ' if args else ''}{args}):", "    j = _new(Job)"]
    for name in Job.__slots__:
        env[f"_set_{name}"] = getattr(Job, name).__set__
        value = fixed.get(name) or _CONVERT.get(name, "{}").format(f"r[{fields.index(name)}]")
        lines.append(f"    _set_{name}(j, {value})")
    lines.append("    return j")
    exec("\n".join(lines), env)  # noqa: S102 - built from Job's own field names only
    return env["read"]


job_from_row: Callable[[tuple], Job] = _reader(list(Job.__slots__), {}, "")
"""A Job from a row of ``JOB_COLS`` (or ``JOB_COLS_LEAN``)."""

claimed_job: Callable[[tuple, float, str, float], Job] = _reader(
    _CLAIM_FIELDS, _SET_BY_CLAIM, "lease_until, worker, now")
"""A Job from a row of ``CLAIM_RETURNING``: ``claimed_job(row, lease_until, worker, now)``."""
