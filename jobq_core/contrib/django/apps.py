from typing import Any

from django.apps import AppConfig
from django.db.models.signals import post_migrate


class JobqConfig(AppConfig):
    """Makes ``manage.py jobq_worker`` available, and has ``manage.py migrate`` create
    (or upgrade) jobq's tables in a Django database that a ``JobqBackend`` uses
    (``"django:<alias>"``). jobq's tables are not Django models: the queue manages them."""

    name = "jobq_core.contrib.django"
    label = "jobq"
    verbose_name = "jobq"

    def ready(self) -> None:
        post_migrate.connect(open_queues, dispatch_uid="jobq_core.contrib.django.open_queues")


def open_queues(using: str = "default", **_kwargs: Any) -> None:
    """Open the queue of every JobqBackend on the database just migrated: this creates
    jobq's tables there (and on SQLite switches the file to WAL mode), which an enqueue
    inside ``transaction.atomic()`` could not do while Django's transaction holds the
    database's write lock."""
    from django.conf import settings

    from .backend import DJANGO_PREFIX, JobqBackend
    from .compat import task_backends

    for alias, params in getattr(settings, "TASKS", {}).items():
        database = params.get("OPTIONS", {}).get("database", "")
        if database == f"{DJANGO_PREFIX}{using}":
            backend = task_backends[alias]
            if isinstance(backend, JobqBackend):
                queue = backend.own_queue()
                try:
                    queue.check()  # creates the tables
                finally:
                    queue.close()  # the test runner drops a database nobody is connected to
