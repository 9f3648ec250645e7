"""The web dashboard's tests: a database of each store with a queue on it
(``stores/fixtures.py``), seeded with jobs in every state the pages show, and a test
client of the dashboard on it (Starlette's, over httpx: no server, no port)."""
from __future__ import annotations

from collections.abc import Iterator

import pytest
from starlette.testclient import TestClient

from jobq_core import GiveUp, Queue, Registry
from jobq_core.testing import FakeClock, drain
from jobq_web import create_app
from stores.fixtures import db, producer, queue  # noqa: F401 - fixtures, by name

TOKEN = "s3cret-token"
HOSTILE = "<script>alert(1)</script><b>B</b>\x1b[2J\x07\u202e&amp;\"'"


def seed(q: Queue, clock: FakeClock) -> dict[str, int]:
    """One job of each kind of row: succeeded, dead (twice, one group; and a hostile
    one), pending, scheduled, and a queue with limits."""
    reg = Registry()

    @reg.task("ok")
    def ok(payload: object) -> dict[str, bool]:
        return {"done": True}

    @reg.task("boom", max_attempts=1)
    def boom(payload: dict[str, str]) -> None:
        raise GiveUp(f"HTTP 502 for invoice {payload['invoice']}")

    @reg.task("hostile", max_attempts=1)
    def hostile(payload: object) -> None:
        raise GiveUp(HOSTILE + "\udc80" + "x" * 1_000_000)

    ids = {"done": q.enqueue("ok", {"a": 1}, queue="mail")}
    ids["dead1"] = q.enqueue("boom", {"invoice": "INV-59476"}, queue="billing")
    ids["dead2"] = q.enqueue("boom", {"invoice": "INV-59480"}, queue="billing")
    ids["hostile"] = q.enqueue("hostile", {"note": HOSTILE}, queue="mail")
    drain(q, reg)
    ids["pending"] = q.enqueue("ok", {"b": 2}, queue="mail")
    ids["later"] = q.enqueue("ok", {}, queue="mail", delay=3600)
    q.set_limit("billing", concurrency=2)
    return ids


@pytest.fixture
def seeded(queue: Queue, clock: FakeClock) -> dict[str, int]:
    return seed(queue, clock)


@pytest.fixture
def client(db: str, seeded: dict[str, int]) -> Iterator[TestClient]:
    with TestClient(create_app(db, token=TOKEN)) as c:
        yield c


@pytest.fixture
def readonly(db: str, seeded: dict[str, int]) -> Iterator[TestClient]:
    with TestClient(create_app(db)) as c:
        yield c


def login(c: TestClient) -> str:
    """Log in with the form; the CSRF field the pages then carry."""
    r = c.post("/login", data={"token": TOKEN, "next": "/all"})
    assert r.status_code == 200, r.text
    page = c.get("/all").text
    start = page.index('name="csrf" value="') + len('name="csrf" value="')
    return page[start:page.index('"', start)]
