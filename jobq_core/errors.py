"""Public exceptions. Every error jobq raises on purpose is a ``JobqError``."""
from __future__ import annotations


class JobqError(Exception):
    """Base class of jobq's own errors."""


class Snooze(Exception):  # noqa: N818 - a request, not an error
    """Raised by a handler (or ``ctx.snooze(seconds)``): put the job back to run again in
    ``seconds``, without counting the attempt against ``max_attempts``; the attempt is
    recorded as ``snoozed``. For waiting on something outside (a rate-limited API, a file
    not there yet) without burning retries."""

    def __init__(self, seconds: float):
        self.seconds = _delay_seconds("snooze", seconds)
        super().__init__(f"snoozed for {seconds}s")


def _delay_seconds(what: str, seconds: object) -> float:
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) \
            or not 0 <= seconds <= 366 * 86400:
        raise ValueError(f"{what} takes seconds from 0 to a year, got {seconds!r}")
    return float(seconds)


class Retry(Exception):  # noqa: N818 - a request, not an error
    """Raised by a handler: this attempt failed, run the job again in ``delay`` seconds
    (None: after the task's backoff, as any failure). The attempt counts against
    ``max_attempts``, unlike ``Snooze``: a job whose attempts are used up goes dead as
    after any failure. It retries whatever the task's ``retry_on``/``no_retry_on`` say.
    The attempt's error reads ``Retry: again in 30s`` (``: reason`` after it when given),
    then the traceback (raise it ``from`` the error that caused it to keep that too)."""

    def __init__(self, reason: str = "", *, delay: float | None = None):
        self.delay = None if delay is None else _delay_seconds("Retry(delay=...)", delay)
        self.reason = str(reason)
        when = "after the task's backoff" if self.delay is None else f"in {self.delay:g}s"
        super().__init__(f"again {when}" + (f": {self.reason}" if self.reason else ""))


class GiveUp(Exception):  # noqa: N818 - a request, not an error
    """Raised by a handler: this job cannot succeed (a permanent error), end it ``dead``
    now, whatever attempts it has left. The attempt's error reads ``GiveUp: reason``, then
    the traceback."""

    def __init__(self, reason: str = ""):
        self.reason = str(reason)
        super().__init__(self.reason)


class LeaseLost(JobqError):
    """The job is no longer this claim's: its lease expired and it was reaped or re-claimed,
    it was cancelled, or it finished. Nothing was written."""

    def __init__(self, job_id: int, token: int | None = None):
        super().__init__(f"job {job_id}: lease lost (the job was reaped, re-claimed or finished)")
        self.job_id = job_id
        self.token = token


class JobNotFound(JobqError, KeyError):
    def __init__(self, job_id: int):
        super().__init__(f"no job with id {job_id}")
        self.job_id = job_id

    def __str__(self) -> str:  # KeyError would repr() the message
        return str(self.args[0])


class InvalidState(JobqError):
    """The operation does not apply to the job's current status (e.g. retrying a succeeded job)."""


class PayloadTooLarge(JobqError, ValueError):
    def __init__(self, size: int, limit: int):
        super().__init__(f"payload is {size} bytes as JSON; the limit is {limit} bytes")
        self.size = size
        self.limit = limit


class DatabaseError(JobqError):
    """The database file cannot be used as a jobq database. The file was left untouched."""


class NotADatabase(DatabaseError):
    """The file is not an SQLite database, or it is corrupt."""


class SchemaTooNew(DatabaseError):
    """The database was written by a newer jobq whose schema this version does not know."""


class SchemaOutdated(DatabaseError):
    """The database's jobq schema is older than this jobq's (``installed``, 0: none yet,
    below ``newest``) and this process may not migrate it: ``jobq migrate`` does."""

    def __init__(self, message: str, installed: int, newest: int):
        super().__init__(message)
        self.installed = installed
        self.newest = newest


class ForeignTable(DatabaseError):
    """A table with one of jobq's names exists but was not created by jobq."""


class StorageFull(JobqError):
    """The disk (or file size limit, or the id space) is full; nothing of the failed write
    was kept."""


class DatabaseUnavailable(JobqError):
    """The database is locked for longer than the busy timeout, read-only, or gone."""


class DatabaseUnreachable(DatabaseUnavailable):
    """The database server did not answer, or answered that it cannot take a session now
    (starting up, shutting down, too many connections): it may answer soon. A server that
    refuses this client (a wrong password, no such database) is ``DatabaseUnavailable``."""


class UnusableConnection(JobqError):
    """The connection given with ``conn=`` cannot take jobq's write: it is closed, it
    reaches another database than the queue's, it is not a connection jobq can use (a
    ``sqlite3.Connection`` for SQLite, a ``psycopg.Connection`` for PostgreSQL), or jobq's
    statement would not run inside a transaction of the caller's (autocommit with none
    open, or a failed transaction). Raised before anything is written."""


class NetworkFilesystemWarning(UserWarning):
    """The database is on a network filesystem, where SQLite's WAL mode is unsafe: its
    shared-memory index only works between processes on one machine."""
