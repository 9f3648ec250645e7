"""A small Django project for jobq's Django Tasks backend tests (tests/test_django.py)."""
import os
from urllib.parse import unquote, urlsplit

SECRET_KEY = "tests-only"
USE_TZ = True
INSTALLED_APPS = ["django_tasks", "jobq_core.contrib.django", "shop"]
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

_db = os.environ["JOBQ_DJANGO_DB"]
if _db.startswith("postgresql://"):
    _url = urlsplit(_db)
    _query = dict(p.split("=", 1) for p in _url.query.split("&") if p)
    DATABASES = {"default": {
        "ENGINE": "django.db.backends.postgresql", "NAME": _url.path.lstrip("/"),
        "USER": unquote(_url.username or ""), "PASSWORD": unquote(_url.password or ""),
        "HOST": unquote(_query.get("host", _url.hostname or "")),
        "PORT": str(_url.port or ""),
    }}
else:
    # the test runner's database is a file too (an in-memory one no worker could reach)
    DATABASES = {"default": {"ENGINE": "django.db.backends.sqlite3", "NAME": _db,
                             "TEST": {"NAME": _db + ".test"}}}

TASKS = {
    "default": {
        "BACKEND": "jobq_core.contrib.django.JobqBackend",
        "QUEUES": ["default", "mail"],
        "OPTIONS": {"database": "django:default", "max_attempts": 2},
    },
}
