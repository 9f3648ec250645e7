"""``Statements``: every statement of ``store/sql.py`` in one dialect's spelling.

Each is declared below, so a misspelt name (``self.statements.JBO``) fails the type check
instead of a run; the module refuses to import while the declarations and ``sql.py``'s
UPPER_CASE names differ, so a statement added to one is added to the other.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping

from . import sql


class Statements:
    """Every shared statement, with the dialect's placeholder and ``FRAGMENTS`` filled in
    (built once, when the dialect is made)."""

    FENCE: str
    INSERT_COLUMNS: str
    INSERT: str
    INSERT_BARE: str
    INSERT_RETURNING: str
    INSERT_UNIQUE: str
    LIVE_WITH_KEY: str
    COPY_OUT: str
    COPY_OUT_DEPS: str
    COPY_STATE: str
    COPY_MARK_NEW: str
    COPY_MARK: str
    COPY_MARK_MOVE: str
    COPY_QUEUE: str
    COMPLETE: str
    COMPLETE_SETTLING: str
    SUCCEEDED_UNDER: str
    EXTEND: str
    LEASES_HELD: str
    PROGRESS: str
    RUNNING_ROW: str
    LEAVE_RUNNING: str
    LEAVE_RUNNING_RETURNING: str
    RECORD_ATTEMPT: str
    LAST_OUTCOMES: str
    ATTEMPT_RECORDED: str
    QUARANTINE: str
    EXPIRED_LEASES: str
    JOB: str
    STATUSES: str
    JOB_STATE: str
    CANCEL_PENDING: str
    REQUEST_CANCEL: str
    REVIVE: str
    REVIVE_ONE: str
    PRUNE_COUNT: str
    PRUNE_PICK: str
    DELETE_ATTEMPTS: str
    DELETE_JOBS: str
    DELETE_DEPS: str
    DEP_TARGETS: str
    DEP_INSERT: str
    MARK_DEPENDED_ON: str
    TO_WAITING: str
    WAITING_DEPENDENTS: str
    UNMET: str
    UNMET_DOWN: str
    RECOUNT: str
    RELEASE_WAITING: str
    CANCEL_DEPENDENT: str
    STRANDED_WAITING: str
    WAITS_ON: str
    WAITED_BY: str
    DEPENDENCY_RESULTS: str
    ATTEMPTS_ENDED: str
    ATTEMPT_CURRENT: str
    PENDING_BY_QUEUE: str
    RUNNING_BY_QUEUE: str
    DEAD_BY_QUEUE: str
    WAITING_BY_QUEUE: str
    RECENT_FINISHED: str
    THROUGHPUT_FINISHED: str
    THROUGHPUT_FAILED: str
    DEAD_GROUPS: str
    QUEUE_STATE: str
    RUNNING_IN_QUEUE: str
    AHEAD: str
    KEY_OPEN: str
    KEY_RUNNING: str
    KEY_EARLIER: str
    HOLDS: str
    QUEUE_CONTROLS: str
    KEYED: str
    CONTROL_STATE: str
    PAUSE: str
    SET_LIMIT: str
    DROP_UNCONTROLLED: str
    SCHEDULES: str
    SCHEDULE_REGISTER: str
    SCHEDULE_TICK: str
    SCHEDULE_REWIND: str
    SCHEDULE_FORGET: str
    SCHEDULE_JOB: str
    WORKER_REGISTER: str
    WORKER_BEAT: str
    WORKER_BEAT_CHILDREN: str
    WORKER_DEREGISTER: str
    WORKER_FORGET: str
    WORKERS: str
    ORDER_PENDING: str

    META: str
    META_PUT: str
    META_DROP: str
    DECLARED: str
    LEADER_ELECT: str
    LEADER_RESIGN: str
    LEADER: str

    def __init__(self, native: Callable[[str], str], fragments: Mapping[str, str]):
        """Each statement with a dialect's ``fragments`` filled in, then made ``native``
        (its placeholder)."""
        for name in NAMES:
            text: str = getattr(sql, name)
            setattr(self, name, native(text.format_map(fragments)))


NAMES = tuple(Statements.__annotations__)
_IN_SQL = {n for n, v in vars(sql).items()
           if n.isupper() and not n.startswith("_") and isinstance(v, str)}
if set(NAMES) != _IN_SQL:
    raise ImportError("store/statements.py and store/sql.py disagree: declared only here "
                      f"{sorted(set(NAMES) - _IN_SQL)}, only in sql.py "
                      f"{sorted(_IN_SQL - set(NAMES))}")
