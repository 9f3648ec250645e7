"""jobq: a background job queue that neither loses a job nor lets a zombie
worker finish it twice. Delivery is at-least-once: handlers must be idempotent."""
from typing import TYPE_CHECKING

from .backoff import Backoff
from .clock import SYSTEM_CLOCK, Clock, SystemClock
from .errors import (
    DatabaseError,
    DatabaseUnavailable,
    DatabaseUnreachable,
    ForeignTable,
    GiveUp,
    InvalidState,
    JobNotFound,
    JobqError,
    LeaseLost,
    NetworkFilesystemWarning,
    NotADatabase,
    PayloadTooLarge,
    Retry,
    SchemaOutdated,
    SchemaTooNew,
    Snooze,
    StorageFull,
    UnusableConnection,
)
from .api.new_jobs import encode_json, prepare
from .api.upkeep import Leader, Retention
from .common.db_health import DbHealth, TableHealth
from .queue import DEFAULT_LEASE, Queue
from .types import (
    DEFAULT_BEAT, DEFAULT_MAX_ATTEMPTS, FORGET_AFTER, LIST_STATUSES, Attempt, ErrorGroup, ExtendResult, Job, JobStatus, Outcome, QueueLimits, QueueStats,
    PoolKind, Rate, RawJSON, ScheduleInfo, Stats, Throughput, WorkerInfo, WorkerState,
)
from .schedule import Schedule
from .registry import JobContext, Registry, RunEnd, RunStatus
from .tasks import Task
from .types import (
    COPY_STATUSES, WHY_REASONS, CopyReport, CopySkip, Dependencies, Hold, Link, Watch, Why,
)

if TYPE_CHECKING:
    from .api.async_queue import AsyncQueue
    from .worker import Worker
else:
    # Hidden from the type checker, which would otherwise take any misspelt name of the
    # package for what this returns; it sees Worker through the import above.
    def __getattr__(name: str) -> object:
        # The worker runtime (threads, the process pool, asyncio: a third of the package's
        # import time) loads on first use of ``jobq_core.Worker``: a web process that only
        # enqueues, and a ``jobq`` command that only reads, never pay for it.
        if name == "Worker":
            from .worker import Worker

            return Worker
        if name == "AsyncQueue":  # asyncio, likewise, for the processes that use it
            from .api.async_queue import AsyncQueue

            return AsyncQueue
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

__all__ = [
    "Attempt", "Backoff", "prepare", "SYSTEM_CLOCK", "encode_json", "ErrorGroup", "ExtendResult", "LIST_STATUSES", "Throughput", "Watch", "Clock", "DEFAULT_LEASE", "DEFAULT_MAX_ATTEMPTS", "DatabaseError",
    "DatabaseUnavailable", "DatabaseUnreachable", "ForeignTable", "InvalidState", "Job", "JobContext", "JobNotFound",
    "JobStatus", "JobqError", "LeaseLost", "NetworkFilesystemWarning", "NotADatabase",
    "Outcome", "PayloadTooLarge", "Queue", "QueueLimits", "QueueStats", "RawJSON", "Registry", "SchemaTooNew",
    "Stats", "StorageFull", "SystemClock", "UnusableConnection", "Worker", "WorkerInfo",
    "WorkerState", "DEFAULT_BEAT", "Task", "FORGET_AFTER", "Rate", "Schedule", "ScheduleInfo",
    "Dependencies", "Hold", "Link", "Snooze", "Retry", "GiveUp", "RunEnd", "RunStatus", "Why", "WHY_REASONS",
    "PoolKind", "CopyReport", "CopySkip", "COPY_STATUSES", "AsyncQueue",
    "Leader", "Retention", "SchemaOutdated", "DbHealth", "TableHealth",
]
