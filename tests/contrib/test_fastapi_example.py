"""The FastAPI example app of the FastAPI and asyncio guide (docs/examples/fastapi_app.py),
run as written on each store: an order, its stock reservation and its shipping job commit
in one AsyncSession transaction; a reservation that fails leaves neither order nor job;
the worker's async handler ships the order and completes its job in one transaction."""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from jobq_core import JobStatus, Queue
from jobq_core.testing import drain

pytest.importorskip("fastapi")
pytest.importorskip("aiosqlite")
pytest.importorskip("greenlet")
from fastapi.testclient import TestClient  # noqa: E402

EXAMPLE = Path(__file__).resolve().parents[2] / "docs" / "examples" / "fastapi_app.py"


@pytest.fixture
def example(database, monkeypatch):
    monkeypatch.setenv("JOBQ_DATABASE", database)
    spec = importlib.util.spec_from_file_location("fastapi_app", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    sys.modules["fastapi_app"] = module  # SQLAlchemy resolves Mapped[...] in its module
    try:
        spec.loader.exec_module(module)
        yield module
    finally:
        sys.modules.pop("fastapi_app", None)
        module.queue.queue.close()


def rows(adapter, database, sql):
    conn = adapter.connect(database, timeout=30)
    try:
        return [tuple(r) for r in conn.execute(sql)]
    finally:
        conn.close()


def test_an_order_and_its_job_commit_together_and_a_rollback_leaves_neither(example,
                                                                           adapter, database):
    with TestClient(example.app) as client:
        conn = adapter.connect(database, timeout=30)
        conn.execute("INSERT INTO stock (item, \"left\") VALUES ('lamp', 3)")
        conn.commit()
        conn.close()
        ok = client.post("/orders", params={"item": "lamp", "quantity": 2})
        assert ok.status_code == 200, ok.text
        refused = client.post("/orders", params={"item": "lamp", "quantity": 2})
        assert refused.status_code == 409
        q = example.queue.queue
        assert q.count() == 1 and q.get(ok.json()["job"]).queue == "shipping"
        assert rows(adapter, database, "SELECT id, quantity FROM orders") == [
            (ok.json()["order"], 2)]
        assert rows(adapter, database, "SELECT \"left\" FROM stock") == [(1,)]
        job_url = f"/jobs/{ok.json()['job']}"
        assert client.get(job_url).json()["status"] == "pending"
        assert client.get(job_url, params={"wait": 0.1}).status_code == 408

    with Queue(database) as q:  # the worker's side: the async handler ships the order
        drain(q, example.registry)
        job = q.get(ok.json()["job"])
    assert job.status is JobStatus.SUCCEEDED and job.result == {"shipped": ok.json()["order"]}
    assert rows(adapter, database, "SELECT shipped FROM orders") in ([(1,)], [(True,)])
