"""``JobqBackend``: Django's Tasks API on a jobq queue.

A Django task becomes a jobq job: its kind is the task function's dotted path
(``shop.tasks.send_receipt``: what the monitor and ``jobq list`` show), its payload
``{"args": [...], "kwargs": {...}}``, its queue the task's ``queue_name``, its priority the
task's (higher runs first, as in both APIs), ``run_after`` its ``run_at``. A result's id is
the job's id, as text.

``OPTIONS``:

* ``database``: a path or URL, as ``Queue`` takes; or ``"django:<alias>"``, the database
  of ``DATABASES[alias]`` (SQLite or PostgreSQL). With ``django:``, the backend's queue
  reads and writes on Django's own connection (``store.borrowed``): an enqueue inside
  ``transaction.atomic()`` commits with the ORM's writes and a rollback leaves no job;
  outside one it commits at once; a ``TestCase`` sees the jobs its test enqueued; and
  the process holds no connection of jobq's that Django does not close (the test
  runner can drop its test database). ``manage.py jobq_worker`` uses connections of
  its own.
* ``max_attempts``: attempts of each job (default: jobq's, 20). A failure is retried with
  backoff while attempts remain (the result stays ``READY``, its ``errors`` growing), and
  is ``FAILED`` once the job is dead. Give 1 for Django's run-once behaviour.

Status from jobq's: pending -> READY, running -> RUNNING, succeeded -> SUCCESSFUL, dead or
cancelled -> FAILED. ``errors`` hold each failed attempt's traceback; ``worker_ids`` each
attempt's worker, so ``attempts`` counts the runs.
"""
from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timezone
from functools import partial
from typing import Any
from urllib.parse import quote

from django.core.exceptions import ImproperlyConfigured
from django.utils.module_loading import import_string

from ...queue import Queue
from ...store import open_store
from ...store.borrowed import Borrowed
from ...store.engine import Engine
from ...types import Attempt, Job, JobStatus, Outcome
from .compat import (
    BaseTaskBackend, Task, TaskError, TaskResult, TaskResultDoesNotExist, TaskResultStatus,
    task_enqueued,
)

DJANGO_PREFIX = "django:"
_STATUS = {JobStatus.PENDING: TaskResultStatus.READY, JobStatus.RUNNING: TaskResultStatus.RUNNING,
           JobStatus.SUCCEEDED: TaskResultStatus.SUCCESSFUL,
           JobStatus.DEAD: TaskResultStatus.FAILED, JobStatus.CANCELLED: TaskResultStatus.FAILED}


class JobqBackend(BaseTaskBackend):
    """A Django Tasks backend whose tasks are jobq jobs (see the module's description)."""

    supports_defer = True
    supports_priority = True
    supports_get_result = True
    supports_async_task = True

    def __init__(self, alias: str, params: dict[str, Any]) -> None:
        super().__init__(alias, params)
        database = self.options.get("database")
        if not isinstance(database, str) or not database:
            raise ImproperlyConfigured(
                f"TASKS[{alias!r}]['OPTIONS']['database'] must name the queue's database: a "
                "path, a postgresql:// URL, or 'django:<alias>' for a Django database")
        self.database = database
        self.db_alias = database[len(DJANGO_PREFIX):] if database.startswith(
            DJANGO_PREFIX) else None
        self.max_attempts = self.options.get("max_attempts")
        self._queue: Queue | None = None
        self._lock = threading.Lock()

    @property
    def queue(self) -> Queue:
        """The jobq queue, opened on first use (Django's test runner renames databases
        before tests run: reading ``DATABASES`` late sees the test database). With
        ``"django:<alias>"`` it reads and writes on Django's own connection of that
        alias, the calling thread's, in ``transaction.atomic()``: inside the
        application's atomic block (a ``TestCase``'s included) it sees and writes what
        that transaction does."""
        with self._lock:
            if self._queue is None:
                if self.db_alias is None:
                    self._queue = Queue(self.database)
                else:
                    url = queue_url(self.db_alias)
                    own = open_store(url)
                    assert isinstance(own, Engine)  # every store open_store makes is one
                    store = Engine(Borrowed(own.backend, partial(_lend, self.db_alias)))
                    self._queue = Queue(url, store=store)
            return self._queue

    def own_queue(self) -> Queue:
        """A new queue on connections of its own (the caller closes it): a worker's
        (``manage.py jobq_worker`` claims, heartbeats and completes outside any request's
        transaction), or ``manage.py migrate``'s, which creates jobq's tables."""
        return Queue(self.database if self.db_alias is None else queue_url(self.db_alias))

    def enqueue(self, task: Task, args: Any, kwargs: Any) -> TaskResult:
        self.validate_task(task)
        options: dict[str, Any] = {"queue": task.queue_name, "priority": task.priority}
        if task.run_after is not None:
            options["run_at"] = task.run_after
        if self.max_attempts is not None:
            options["max_attempts"] = self.max_attempts
        payload = {"args": list(args), "kwargs": dict(kwargs)}
        job_id = self.queue.enqueue(task.module_path, payload, **options)
        now = datetime.fromtimestamp(self.queue.clock.now(), timezone.utc)
        result = TaskResult(task=task, id=str(job_id), status=TaskResultStatus.READY,
                            enqueued_at=now, started_at=None, finished_at=None,
                            last_attempted_at=None, args=payload["args"],
                            kwargs=payload["kwargs"], backend=self.alias, errors=[],
                            worker_ids=[])
        task_enqueued.send(type(self), task_result=result)
        return result

    def get_result(self, result_id: str) -> TaskResult:
        try:
            job_id = int(result_id)
        except (TypeError, ValueError):
            raise TaskResultDoesNotExist(result_id) from None
        job = self.queue.get(job_id)
        if job is None:
            raise TaskResultDoesNotExist(result_id)
        return self.result_of(job, self.queue.attempts(job_id))

    def result_of(self, job: Job, attempts: list[Attempt]) -> TaskResult:
        """``job`` and its ``attempts`` as Django reads a result."""
        task = import_string(job.kind)
        if not isinstance(task, Task):
            raise TaskResultDoesNotExist(f"{job.id}: job kind {job.kind!r} is not a Django task")
        task = task.using(queue_name=job.queue, priority=job.priority, run_after=_at(job.run_at))
        payload = job.payload if isinstance(job.payload, dict) else {}
        errors = [TaskError(exception_class_path=_exception_path(a.error), traceback=a.error)
                  for a in attempts if a.outcome != Outcome.SUCCEEDED and a.error]
        result = TaskResult(
            task=task, id=str(job.id), status=_STATUS[job.status], enqueued_at=_at(job.created_at),
            started_at=_at(job.started_at), finished_at=_at(job.finished_at),
            last_attempted_at=_at(attempts[-1].started_at) if attempts else None,
            args=payload.get("args", []), kwargs=payload.get("kwargs", {}),
            backend=self.alias, errors=errors, worker_ids=[a.worker or "" for a in attempts])
        if job.status == JobStatus.SUCCEEDED:
            object.__setattr__(result, "_return_value", job.result)
        return result

    def close(self) -> None:
        with self._lock:
            if self._queue is not None:
                self._queue.close()
                self._queue = None


@contextmanager
def _lend(alias: str) -> Iterator[Any]:
    """Django's driver connection of ``alias`` (the calling thread's), inside
    ``transaction.atomic()``: joining the application's transaction where one is open,
    else one of its own, committed at the end."""
    from django.db import connections, transaction

    with transaction.atomic(using=alias, savepoint=False):
        yield connections[alias].connection


def queue_url(alias: str) -> str:
    """The jobq database string for ``DATABASES[alias]``: SQLite's file, or a
    postgresql:// URL from its NAME, USER, PASSWORD, HOST and PORT."""
    from django.db import connections

    try:
        settings = connections.settings[alias]
    except Exception as e:  # noqa: BLE001 - Django's own error names the alias
        raise ImproperlyConfigured(f"'django:{alias}': {e}") from None
    engine, name = settings["ENGINE"], str(settings["NAME"] or "")
    if engine.endswith("sqlite3"):
        if not name or name == ":memory:" or "mode=memory" in name:
            raise ImproperlyConfigured(
                f"'django:{alias}' is an in-memory SQLite database, which no worker can reach: "
                "give it a file (for tests: DATABASES[...]['TEST']['NAME'])")
        return name
    if "postgresql" in engine:
        user = quote(settings.get("USER") or "", safe="")
        password = quote(settings.get("PASSWORD") or "", safe="")
        auth = f"{user}:{password}@" if password else (f"{user}@" if user else "")
        host = settings.get("HOST") or ""
        if host.startswith("/"):  # a socket directory: a query parameter, not a host
            where, query = "", f"?host={quote(host, safe='')}"
        else:
            where, query = host, ""
        port = f":{settings['PORT']}" if settings.get("PORT") else ""
        return f"postgresql://{auth}{where}{port}/{quote(name, safe='')}{query}"
    raise ImproperlyConfigured(f"'django:{alias}' uses {engine}; jobq runs on SQLite and "
                               "PostgreSQL")


def _at(t: float | None) -> datetime | None:
    return None if t is None else datetime.fromtimestamp(t, timezone.utc)


def _exception_path(error: str) -> str:
    """``module.Class`` of the exception a traceback ends with (builtins for a bare name;
    ``builtins.Exception`` for an error that is not a traceback, e.g. a timeout)."""
    last = error.rstrip().rsplit("\n", 1)[-1]
    name = last.partition(":")[0].strip()
    if not name or " " in name or not all(p.isidentifier() for p in name.split(".")):
        return "builtins.Exception"
    return name if "." in name else f"builtins.{name}"
