"""Health checks on a worker's metrics port and from ``jobq health``: /healthz while the
worker's loops turn, /readyz while the database answers with a current schema; 503 (and
exit 1) with PostgreSQL stopped, 200 again once it is back."""
from __future__ import annotations

import json
import subprocess
import sys
import urllib.error
import urllib.request

import pytest

from jobq_core import Queue, Registry, Worker
from jobq_core.testing import wait_for

from .conftest import start

pytest.importorskip("prometheus_client")
from jobq_core.observability.prometheus import MetricsServer  # noqa: E402


def get(server: MetricsServer, path: str) -> tuple[int, dict]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{server.port}{path}", timeout=30) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def health(database: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "jobq_cli.main", "health", "--json",
                           "--db", database], capture_output=True, text=True, timeout=60)


def registry() -> Registry:
    r = Registry()
    r.task("noop")(lambda payload: None)
    return r


@pytest.mark.slow  # a real worker's loop and heartbeat, seconds of real time
def test_a_running_worker_is_alive_and_ready_and_a_stopping_one_is_not_ready(db):
    with Queue(db) as q:
        worker = Worker(q, registry(), concurrency=1, lease=3)
        server = MetricsServer(worker).start()
        try:
            status, body = get(server, "/healthz")
            assert status == 200 and body["status"] == "ok"  # not started yet: alive
            t = start(worker)
            wait_for(lambda: worker.looped_at and worker.beat_at, timeout=10)
            status, body = get(server, "/healthz")
            assert status == 200, body
            assert body["checks"]["claim_loop"]["seconds_since"] < 5
            status, body = get(server, "/readyz")
            assert (status, body["checks"]["schema"]["ok"]) == (200, True), body
            worker.stop()
            t.join(10)
            status, body = get(server, "/readyz")
            assert status == 503 and body["checks"]["worker"]["stopping"]
        finally:
            server.close()
    done = health(db)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["status"] == "ok"


def test_jobq_health_exits_1_for_an_older_schema_and_for_no_database(adapter, database,
                                                                     tmp_path):
    adapter.old_schema(database, adapter.schema_version - 1)
    done = health(database)
    assert done.returncode == 1
    assert json.loads(done.stdout)["checks"]["schema"]["ok"] is False
    missing = health(str(tmp_path / "missing.db"))
    assert missing.returncode == 1
    assert json.loads(missing.stdout)["checks"]["database"]["ok"] is False


@pytest.mark.slow  # a PostgreSQL cluster of its own, stopped and started again
def test_readyz_answers_503_while_postgresql_is_stopped_and_200_once_it_is_back(
        own_pg_cluster):
    cluster = own_pg_cluster
    url = cluster.url
    with Queue(url, busy_timeout=3) as q:
        q.check()
        worker = Worker(q, registry(), concurrency=1, lease=3)
        server = MetricsServer(worker).start()
        t = start(worker)
        try:
            wait_for(lambda: worker.beat_at, timeout=10)
            assert get(server, "/readyz")[0] == 200
            assert health(url).returncode == 0
            with cluster.halted():
                status, body = get(server, "/readyz")
                assert status == 503 and body["checks"]["database"]["ok"] is False
                assert get(server, "/healthz")[0] == 200  # restarting would not help
                down = health(url)
                assert down.returncode == 1
                assert json.loads(down.stdout)["checks"]["database"]["ok"] is False
            wait_for(lambda: get(server, "/readyz")[0] == 200, timeout=30)
            assert health(url).returncode == 0
        finally:
            worker.stop()
            t.join(30)
            server.close()
