"""SQLite's column expressions for ``Job`` fields (the readers are ``store.rows``'s).

A payload too big for the row lives in ``jobq_payloads``, so the payload column is read
through it.
"""
from __future__ import annotations

from ...types import Job
from ..rows import CLAIM_FIELDS, claimed_job, decode, job_from_row

_PAYLOAD = "coalesce(payload, (SELECT p.payload FROM jobq_payloads p WHERE p.job_id=jobq_jobs.id))"
# Column expressions by Job field.
_COLUMNS = {name: name for name in Job.__slots__} | {"payload": _PAYLOAD}

JOB_COLS = ", ".join(_COLUMNS[name] for name in Job.__slots__)
# The same columns with payload and result left unread: listings never load what they
# do not show (a payload may be megabytes).
JOB_COLS_LEAN = ", ".join("NULL" if name in ("payload", "result") else _COLUMNS[name]
                          for name in Job.__slots__)
# The RETURNING list of the claim statement, read by ``claimed_job``.
CLAIM_RETURNING = ", ".join(_COLUMNS[name] for name in CLAIM_FIELDS)


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


__all__ = ["CLAIM_RETURNING", "JOB_COLS", "JOB_COLS_LEAN", "claimed_job", "decode",
           "job_from_row", "text"]
