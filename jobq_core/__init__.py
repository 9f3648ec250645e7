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
    NetworkFilesystemWarning,
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
    "Attempt", "Backoff", "Clock", "DEFAULT_LEASE", "DEFAULT_MAX_ATTEMPTS", "DatabaseError",
    "DatabaseUnavailable", "ForeignTable", "InvalidState", "Job", "JobContext", "JobNotFound",
    "JobStatus", "JobqError", "LeaseLost", "NetworkFilesystemWarning", "NotADatabase",
    "Outcome", "PayloadTooLarge", "Queue", "QueueStats", "RawJSON", "Registry", "SchemaTooNew",
    "Stats", "StorageFull", "SystemClock", "Worker", "WorkerInfo",
]
