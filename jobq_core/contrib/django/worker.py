"""The worker's side: a registry that finds the handler of a Django task by its kind
(the task's dotted path), and the worker ``manage.py jobq_worker`` runs.

A kind is imported only if it names a Django task of a ``JobqBackend``: a job of another
kind (or one written by someone guessing module names) fails with "no handler" like any
unknown kind, after at most importing a module that is already installed. A process
pool's children import ``registry`` from this module, which sets Django up first.
"""
from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

import django
from django.apps import apps

if not apps.ready:  # a process pool's child imports this module before anything else
    django.setup()

from django.db import connections  # noqa: E402
from django.utils.module_loading import import_string  # noqa: E402

from ...registry import JobContext, Registry  # noqa: E402
from ...tasks import Task as JobqTask  # noqa: E402
from ...worker import Worker  # noqa: E402
from .backend import JobqBackend  # noqa: E402
from .compat import Task, TaskContext  # noqa: E402

log = logging.getLogger("jobq.django")


class DjangoRegistry(Registry):
    """Handlers for every Django task of a ``JobqBackend``, found on first sight of
    their kind (a task module need not be imported before the worker starts)."""

    def __init__(self) -> None:
        super().__init__()
        self._lock = threading.Lock()
        self._not_tasks: set[str] = set()

    def get(self, kind: str) -> JobqTask | None:
        found = super().get(kind)
        if found is not None or kind in self._not_tasks:
            return found
        with self._lock:
            found = super().get(kind)
            if found is None and kind not in self._not_tasks:
                found = self._resolve(kind)
            return found

    def __contains__(self, kind: object) -> bool:
        return isinstance(kind, str) and self.get(kind) is not None

    def describe_kinds(self) -> str:
        seen = self.kinds()
        return ("every Django task of a JobqBackend, found by its path on first sight"
                + (f" (so far: {','.join(seen)})" if seen else ""))

    def _resolve(self, kind: str) -> JobqTask | None:
        try:
            task = import_string(kind)
        except (ImportError, ValueError):
            task = None
        if not isinstance(task, Task) or not isinstance(task.get_backend(), JobqBackend):
            self._not_tasks.add(kind)
            return None
        return self.task(kind)(_handler(task))


def _handler(task: Task) -> Callable[[Any, JobContext], Any]:
    backend: JobqBackend = task.get_backend()

    def run(payload: Any, ctx: JobContext) -> Any:
        args, kwargs = payload.get("args", []), payload.get("kwargs", {})
        _close_old_connections()  # as a request does: none left broken by the last job
        try:
            if task.takes_context:
                result = backend.get_result(str(ctx.job_id))
                value = task.call(TaskContext(task_result=result), *args, **kwargs)
            else:
                value = task.call(*args, **kwargs)
        finally:
            _close_old_connections()
        return value

    run.__module__ = task.func.__module__
    run.__qualname__ = task.func.__qualname__
    return run


def _close_old_connections() -> None:
    """Django's ``close_old_connections``, except for a connection inside an atomic
    block (a ``TestCase``'s, when ``drain`` runs a task in a test): that one is the
    test's, and closing it would end the test's transaction."""
    for connection in connections.all(initialized_only=True):
        if not connection.in_atomic_block:
            connection.close_if_unusable_or_obsolete()


registry = DjangoRegistry()


def run_worker(backend_alias: str = "default", **options: Any) -> None:
    """Run a worker on the queue of the ``JobqBackend`` named ``backend_alias``, with
    ``Worker``'s ``options``."""
    from .compat import task_backends

    backend = task_backends[backend_alias]
    if not isinstance(backend, JobqBackend):
        raise ValueError(f"TASKS[{backend_alias!r}] is a {type(backend).__name__}, not "
                         "jobq_core.contrib.django.JobqBackend")
    if options.get("pool") == "process":
        options.setdefault("app", f"{__name__}:registry")
    burst = options.pop("burst", False)
    queue = backend.own_queue()
    try:
        Worker(queue, registry, **options).run(burst=burst)
    finally:
        queue.close()
