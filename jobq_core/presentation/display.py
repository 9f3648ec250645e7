"""How jobq writes durations and states for people: one format for the CLI and the monitor.

Plain strings and data only (no Rich here): each tool turns a ``Badge`` into its own styled
text. A state always carries a glyph and a word, so it reads without colour (NO_COLOR,
colour-blind operators); ``style`` is a Rich style name, data to whoever renders it.
"""
from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

# re-exported for the front ends (the "as" form says so to the type checker)
from ..common.time_text import duration as duration
from ..common.time_text import parse_duration as parse_duration
from ..common.time_text import timestamp as timestamp
from ..common.time_text import is_time as _is_time
from ..types import (
    DEFAULT_MAX_ATTEMPTS, Attempt, Job, JobStatus, QueueLimits, QueueStats, WorkerInfo, WorkerState,
)

R = TypeVar("R", Job, Attempt, WorkerInfo)


_SECRET_KEYS = {"password", "sslpassword"}


def masked_url(url: str) -> str:
    """A database URL as shown to people: a password, in the ``user:password@`` form or a
    ``password=`` (or ``sslpassword=``) query parameter, becomes ``***``; everything else
    stays exactly as written (no re-encoding, multi-host and Unix-socket forms intact).
    A file path (no ``scheme://``) is returned unchanged. Every place that shows a
    database (headers, live views, hints) must show it through this: a URL on screen is a
    URL in a screenshot or a pasted log."""
    text = str(url)
    scheme, sep, rest = text.partition("://")
    if not sep or not scheme or not scheme.replace("+", "").isalnum():
        return text
    rest, hash_, fragment = rest.partition("#")
    rest, ask, query = rest.partition("?")
    netloc, slash, path = rest.partition("/")
    userinfo, at, hosts = netloc.rpartition("@")
    if at and ":" in userinfo:
        netloc = f"{userinfo.partition(':')[0]}:***@{hosts}"
    if query:
        params = []
        for param in query.split("&"):
            key, eq, _ = param.partition("=")
            params.append(f"{key}=***" if eq and key.lower() in _SECRET_KEYS else param)
        query = "&".join(params)
    return f"{scheme}://{netloc}{slash}{path}{ask}{query}{hash_}{fragment}"


def limits_words(limits: QueueLimits) -> str:
    """A set of limits in a few words (``≤5 running · 100/m · ≤2 per key``), as the code
    declares them or a worker's log tells; ``no limits`` for none."""
    return " · ".join(_limit_parts(limits)) or "no limits"


def drift_text(qs: QueueStats) -> str:
    """What the code declares, when the database holds other limits (``code: ≤5
    running``); empty when they agree or no code declares the queue's limits."""
    return f"code: {limits_words(qs.declared)}" if qs.drift and qs.declared else ""


def limits_text(qs: QueueStats) -> str:
    """A queue's limits in a few words, as ``jobq queues`` and the monitor's Queues view
    show them: ``≤3 running · 5/s · ≤2 per key (4 keys busy)``; empty without limits."""
    parts = _limit_parts(qs)
    if qs.keyed:
        parts[-1] += f" ({qs.keys_busy} key{'s' * (qs.keys_busy != 1)} busy)"
    return " · ".join(parts)


def _limit_parts(limits: QueueLimits | QueueStats) -> list[str]:
    """The words of each limit set: running jobs, rate, then the keys' (ordered, or how
    many per key)."""
    parts = [f"≤{limits.concurrency} running"] * (limits.concurrency is not None)
    parts += [str(limits.rate)] * (limits.rate is not None)
    if limits.ordered:
        parts.append("ordered by key")
    elif limits.key_concurrency is not None:
        parts.append(f"≤{limits.key_concurrency} per key")
    return parts


# -- records from the database, made safe to show ----------------------------------------

# Fields jobq computes with: integers (where the field's type says int: a worker's id is a
# name) and times (seconds since the epoch).
_INTS = {"priority", "attempts", "max_attempts", "attempt", "token", "pid", "concurrency",
         "busy", "id", "job_id"}
_INTERVALS = {"beat_interval", "lease"}  # seconds a worker recorded; None if unreadable
_TIMES = {"run_at", "lease_until", "created_at", "started_at", "finished_at", "heartbeat_at",
          "ended_at", "last_seen"}


def checked(record: R) -> tuple[R, tuple[str, ...]]:
    """``record`` with every value jobq cannot compute with (another program wrote it: a
    text time, a number past the year 9999, a text count) replaced by a neutral one (no
    time, zero), and the list of what was replaced, raw values included, for display.
    Records jobq wrote come back as they are, with no problems."""
    # Any: each value replaces the field it is named for, in that field's own type
    bad: dict[str, Any] = {}
    problems = []
    for f in dataclasses.fields(record):
        value = getattr(record, f.name)
        if value is None:
            continue
        if f.name in _TIMES and not _is_time(value):
            # None where a record may have no such time, else the epoch: long ago
            bad[f.name] = None if "None" in str(f.type) else 0.0
            problems.append(f"{f.name} = {value!r:.60} (not a time)")
        elif f.name in _INTS and str(f.type).startswith("int") and type(value) is not int:
            bad[f.name] = 0
            problems.append(f"{f.name} = {value!r:.60} (not an integer)")
        elif f.name in _INTERVALS and not (type(value) in (int, float) and math.isfinite(value)
                                           and value > 0):
            bad[f.name] = None
            problems.append(f"{f.name} = {value!r:.60} (not a number of seconds)")
        elif f.name == "progress" and not (type(value) in (int, float) and 0 <= value <= 1):
            bad[f.name] = None
            problems.append(f"progress = {value!r:.60} (not a fraction)")
    if isinstance(record, Attempt) and not isinstance(record.outcome, str):
        bad["outcome"] = str(record.outcome)
    return (dataclasses.replace(record, **bad) if bad else record), tuple(problems)


def countdown(seconds: float) -> str:
    """A clock-like span for countdowns that tick each second: 0:42, 12:05, 1:02:03."""
    s = max(0, int(seconds))
    if s < 3600:
        return f"{s // 60}:{s % 60:02d}"
    return f"{s // 3600}:{s % 3600 // 60:02d}:{s % 60:02d}"


@dataclass(frozen=True, slots=True)
class Badge:
    """A state as people see it: ``▶ running``."""

    glyph: str
    word: str
    style: str = ""  # a Rich style name

    @property
    def label(self) -> str:
        return f"{self.glyph} {self.word}"


JOB_BADGES: dict[str, Badge] = {
    JobStatus.PENDING: Badge("○", "pending"),
    "scheduled": Badge("◷", "scheduled", "dim"),
    "retrying": Badge("↻", "retrying", "yellow"),
    JobStatus.RUNNING: Badge("▶", "running", "cyan"),
    JobStatus.SUCCEEDED: Badge("✓", "succeeded", "green"),
    JobStatus.DEAD: Badge("✗", "dead", "bold red"),
    JobStatus.CANCELLED: Badge("⊘", "cancelled", "dim"),
    JobStatus.WAITING: Badge("◇", "waiting", "dim"),
}
"""By the words of ``LIST_STATUSES``: a stored status, or ``scheduled``/``retrying``."""

WORKER_BADGES: dict[WorkerState, Badge] = {
    WorkerState.OK: Badge("●", "ok", "green"),
    WorkerState.LATE: Badge("◐", "late", "yellow"),
    WorkerState.LOST: Badge("✗", "lost", "bold red"),
}


def job_state(job: Job, now: float) -> str:
    """The job's status as a word of ``LIST_STATUSES``: a pending job that has failed
    before is ``retrying`` (due or still backing off: people read "scheduled" as "never
    ran"), one not due yet that never ran ``scheduled``."""
    if job.status == JobStatus.PENDING:
        if job.attempts:
            return "retrying"
        if job.run_at > now:
            return "scheduled"
    return str(job.status)


def job_badge(job: Job, now: float) -> Badge:
    state = job_state(job, now)
    return JOB_BADGES.get(state) or Badge("?", state)


# -- fitting columns to a width ----------------------------------------------------------

def tries(job: Job) -> str:
    """``TRY``: ``2/5``, attempts made of the job's limit; before its first claim ``0/3``
    when its enqueue set the limit (a task's ``max_attempts``, or the enqueue's own), else
    ``0/–``. A limit left at the default (20) is the enqueuer's guess: a worker lowers it
    to its task's ``max_attempts`` when it claims the job, and no reader without the
    registry knows that figure, so ``0/20`` for a task of 3 attempts would be wrong."""
    made = "-" if job.attempts is None else job.attempts
    if made == 0:
        given = job.max_attempts is not None and job.max_attempts != DEFAULT_MAX_ATTEMPTS
        return f"0/{job.max_attempts}" if given else "0/–"
    return f"{made}/{'-' if job.max_attempts is None else job.max_attempts}"


def attempts_text(job: Job, sep: str = " of ") -> str:
    """The detail views' ``attempts``: ``2 of 5`` (``sep`` between), or before the first
    claim ``0 of at most 20`` and why (see ``tries``)."""
    if job.attempts == 0 and job.max_attempts is not None:
        return (f"0 of at most {job.max_attempts} (its task's max_attempts, if lower, "
                "applies from its first claim)")
    return tries(job).replace("/", sep)


def cut_widths(natural: Sequence[int], floors: Sequence[tuple[int, int]],
               order: Sequence[int], over: int) -> list[int]:
    """Column widths after giving up ``over`` cells: the columns in ``order`` (the least
    useful text first) are cut, each down to its first floor, then, all of them there,
    each down to its second. ``floors[i]`` is ``(want, least)``: the width a column still
    reads well at, and the least it may have. Fixed columns are simply not in ``order``.
    Shared by the CLI's tables and the monitor's, so both cut the same way."""
    widths = list(natural)
    for level in (0, 1):
        for i in order:
            if over <= 0:
                return widths
            cut = max(0, min(over, widths[i] - floors[i][level]))
            widths[i] -= cut
            over -= cut
    return widths


def cut_middle(text: str, width: int) -> str:
    """``text`` in ``width`` characters, cut in the middle: an error line keeps its start
    (the exception type) and its end (the specifics that tell one failure from another)."""
    if len(text) <= width:
        return text
    if width < 8:
        return text[: max(0, width - 1)] + "…"
    head, tail = middle_cut(text, width)
    return text[:head] + "…" + text[tail:]


def middle_cut(text: str, width: int) -> tuple[int, int]:
    """Where ``cut_middle`` cuts: keep ``text[:head]`` and ``text[tail:]``. The tail never
    starts just after a visible ``␛`` (``textsafe``): what followed an escape stays marked
    as such, not shown as plain ``]52;...``."""
    head = (width - 1) * 2 // 5
    tail = len(text) - (width - 1 - head)
    if text[tail - 1] == "␛":
        head, tail = head - 1, tail - 1
    return head, tail
