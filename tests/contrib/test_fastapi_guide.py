"""The SQLAlchemy guide's FastAPI code, run as written (its DATABASE pointed at the test's
PostgreSQL database): a request's user and its job commit together, and a commit that fails
is an error response with neither, never a job id that does not exist."""
from __future__ import annotations

import re
import sys
import types
from pathlib import Path

import psycopg
import pytest

from jobq_core import Queue

pytest.importorskip("fastapi")
from fastapi.testclient import TestClient  # noqa: E402

GUIDE = Path(__file__).resolve().parents[2] / "docs" / "guides" / "sqlalchemy.md"


def guide_app(database: str) -> dict:
    text = GUIDE.read_text()
    section = text[text.index("## FastAPI"):]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    assert 'DATABASE = "postgresql://app@db/shop"' in code
    module = types.ModuleType("guide_app")  # SQLAlchemy resolves Mapped[...] in its module
    sys.modules[module.__name__] = module
    exec(compile(code.replace("postgresql://app@db/shop", database), str(GUIDE), "exec"),
         module.__dict__)
    return module.__dict__


def test_the_guides_endpoint_commits_the_user_and_its_job_together(pg_url):
    # The users table, its email unique only at commit: a duplicate fails the commit,
    # after the job's insert succeeded inside the transaction.
    with psycopg.connect(pg_url, autocommit=True) as conn:
        with Queue(pg_url) as q:
            q.check()  # connects (on first use): jobq's tables made
        conn.execute("CREATE TABLE users (id serial PRIMARY KEY, email text NOT NULL, "
                     "CONSTRAINT users_email UNIQUE (email) DEFERRABLE INITIALLY DEFERRED)")
    app = guide_app(pg_url)
    client = TestClient(app["app"], raise_server_exceptions=False)
    try:
        first = client.post("/users", params={"email": "ada@example.com"})
        assert first.status_code == 200
        job = app["queue"].get(first.json()["job"])
        assert job is not None and job.kind == "email.welcome" and job.queue == "mail"
        assert job.payload == {"user": first.json()["user"]}

        again = client.post("/users", params={"email": "ada@example.com"})
        assert again.status_code == 500  # the commit failed: the client is told so
        assert app["queue"].count() == 1  # and no second job exists
        with psycopg.connect(pg_url) as conn:
            assert conn.execute("SELECT count(*) FROM users").fetchone()[0] == 1
    finally:
        app["queue"].close()
        app["engine"].dispose()
