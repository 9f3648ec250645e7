"""jobq as a Django Tasks backend (``jobq[django]``): ``django.tasks`` on Django 6, the
``django-tasks`` backport (module ``django_tasks``) before it.

    INSTALLED_APPS = [..., "jobq_core.contrib.django"]
    TASKS = {"default": {"BACKEND": "jobq_core.contrib.django.JobqBackend",
                         "QUEUES": ["default", "mail"],
                         "OPTIONS": {"database": "django:default"}}}

Workers: ``python manage.py jobq_worker``. See ``backend.py`` for the options and the
rules, and the Django guide in the documentation.
"""
from __future__ import annotations

from typing import Any



def __getattr__(name: str) -> Any:
    # Imported on first use: Django imports this package while it fills INSTALLED_APPS,
    # before the Tasks framework may be imported.
    if name == "JobqBackend":
        from .backend import JobqBackend

        return JobqBackend
    raise AttributeError(name)


__all__ = ["JobqBackend"]
