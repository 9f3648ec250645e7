"""jobq: a background job queue on SQLite that neither loses a job nor lets a zombie
worker finish it twice. Delivery is at-least-once: handlers must be idempotent."""
from .backoff import Backoff
from .clock import Clock, SystemClock
from .errors import (
    DatabaseError,
    DatabaseUnavailable,
    ForeignTable,
    InvalidState,
    JobNotFound,
    JobqError,
    LeaseLost,
    NotADatabase,
    PayloadTooLarge,
    SchemaTooNew,
    StorageFull,
)
from .queue import DEFAULT_LEASE, DEFAULT_MAX_ATTEMPTS, Queue
from .types import Attempt, Job, JobStatus, Outcome, QueueStats, RawJSON, Stats, WorkerInfo
from .registry import JobContext, Registry
from .worker import Worker

__all__ = [
    "DEFAULT_LEASE", "DEFAULT_MAX_ATTEMPTS", "Attempt", "Backoff", "Clock", "DatabaseError",
    "DatabaseUnavailable", "ForeignTable", "InvalidState", "Job", "JobNotFound", "JobStatus",
    "JobqError", "LeaseLost", "NotADatabase", "Outcome", "PayloadTooLarge", "Queue",
    "QueueStats", "RawJSON", "SchemaTooNew", "Stats", "StorageFull", "SystemClock", "WorkerInfo",
    "JobContext", "Registry", "Worker",
]
