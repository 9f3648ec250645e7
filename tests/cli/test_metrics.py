"""Prometheus metrics: ``jobq metrics`` parsed with prometheus_client's own parser agrees
with ``jobq stats --json`` and writes nothing; a worker's ``/metrics`` (``jobq run
--metrics-port``) counts its runs' outcomes and durations."""
from __future__ import annotations

import json
import socket
import time
import urllib.request

import pytest
from prometheus_client.parser import text_string_to_metric_families
from typer.testing import CliRunner

from jobq_cli.main import app
from jobq_core import Queue
from jobq_core.testing import FakeClock

from .conftest import wait_for

runner = CliRunner()


def parse(text: str) -> dict[str, dict[tuple, float]]:
    """{family or sample name: {((label, value), ...): value}}; a histogram's samples
    under their own names (``..._bucket``, ``..._count``, ``..._sum``)."""
    out: dict[str, dict[tuple, float]] = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            out.setdefault(s.name, {})[tuple(sorted(s.labels.items()))] = s.value
    return out


@pytest.fixture(params=["sqlite", "postgresql"])
def database(request, tmp_path):
    if request.param == "sqlite":
        return str(tmp_path / "jobs.db")
    return request.getfixturevalue("pg_url")


def _a_queue_in_every_state(database: str) -> None:
    now = time.time()
    past = FakeClock(now - 120)
    with Queue(database, clock=past) as old:  # jobs that waited two minutes; a dead lease
        old.enqueue_many([("a", 1), ("a", 2), {"kind": "m", "queue": "mail"}])
        stale = old.claim("gone", queues=["mail"], lease=5)
        assert stale is not None
    with Queue(database) as q:
        q.enqueue("later", delay=3600, queue="mail")
        q.enqueue_many([("x", i) for i in range(3)])
        j = q.claim("w", lease=300)
        q.fail(j.id, j.token, "retry me", retry_in=0)  # retrying, and still pending
        q.enqueue("dead", max_attempts=1, queue="bulk")
        j = q.claim("w", queues=["bulk"])
        q.fail(j.id, j.token, "no")
        q.enqueue("run", queue="bulk")
        q.claim("w", queues=["bulk"], lease=300)
        for name, ago in (("ok", 1), ("late", 20), ("lost", 40)):
            with Queue(database, clock=FakeClock(now - ago)) as at:
                at.register_worker(name, host="h", pid=1, queues=None, concurrency=1)


def test_jobq_metrics_agrees_with_jobq_stats_json_and_writes_nothing(database):
    _a_queue_in_every_state(database)
    with Queue(database) as q:
        watch = q.watch()
        try:
            result = runner.invoke(app, ["metrics", "--db", database], catch_exceptions=False)
            assert result.exit_code == 0, result.output
            assert watch.wait(0.2) is False  # no commit from jobq metrics
        finally:
            watch.close()
    m = parse(result.stdout)
    stats = json.loads(runner.invoke(app, ["stats", "--json", "--db", database]).stdout)
    jobs = {dict(k)["queue"] + "/" + dict(k)["status"]: v for k, v in m["jobq_jobs"].items()}
    expected = {f"{q}/{s}": n for q, v in stats["queues"].items()
                for s, n in v.items() if s in ("pending", "running", "dead")}
    assert jobs == expected
    assert jobs == {"default/pending": 5, "default/running": 0, "default/dead": 0,
                    "mail/pending": 1, "mail/running": 1, "mail/dead": 0,
                    "bulk/pending": 0, "bulk/running": 1, "bulk/dead": 1}
    assert sum(v for k, v in jobs.items() if k.endswith("/pending")) == stats["pending"]
    assert m["jobq_expired_leases"][()] == stats["expired_leases"] == 1
    lag = {dict(k)["queue"]: v for k, v in m["jobq_queue_lag_seconds"].items()}
    assert lag["default"] == pytest.approx(stats["queues"]["default"]["oldest_pending_age"],
                                           abs=5)
    assert 115 < lag["default"] < 200 and lag["mail"] == 0 and lag["bulk"] == 0
    workers = {dict(k)["state"]: v for k, v in m["jobq_workers"].items()}
    assert workers == {"ok": 1, "late": 1, "lost": 1}


def test_jobq_metrics_on_a_missing_database_is_one_line_and_creates_nothing(tmp_path):
    result = runner.invoke(app, ["metrics", "--db", str(tmp_path / "none.db")])
    assert result.exit_code == 1 and "no such database file" in result.stderr
    assert not (tmp_path / "none.db").exists()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _scrape(port: int) -> dict:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as r:
        assert r.headers["Content-Type"].startswith("text/plain")
        return parse(r.read().decode())


@pytest.mark.slow
def test_a_workers_metrics_count_its_outcomes_and_durations(db, queue, procs):
    port = _free_port()
    worker = procs.start("run", "--app", "taskapp", "--concurrency", "4", "--lease", "3",
                         "--metrics-port", str(port), "--db", db)
    wait_for(lambda: queue.workers(), timeout=30)
    ids = {
        "ok": queue.enqueue_many([("nap", {}) for _ in range(3)]),
        "boom": [queue.enqueue("boom", 1, max_attempts=2, queue="risky")],
        "slow": [queue.enqueue("slow")],
        "taken": [queue.enqueue("nap", {"first": 1.5})],
    }
    taken = ids["taken"][0]
    wait_for(lambda: queue.get(taken).status == "running", timeout=30)
    queue.retry(taken, force=True)  # its run is fenced out; it runs again
    wait_for(lambda: queue.stats().pending + queue.stats().running == 0, timeout=60)

    def outcomes() -> dict:
        m = _scrape(port)
        return {tuple(v for _, v in k): n for k, n in m.get("jobq_job_outcomes_total", {}).items()}

    expected = {("nap", "succeeded", "default"): 4, ("boom", "failed", "risky"): 1,
                ("boom", "dead", "risky"): 1, ("slow", "timed_out", "default"): 1,
                ("nap", "lease_lost", "default"): 1}
    wait_for(lambda: outcomes() == expected, timeout=30)  # the fenced run ends at 1.5 s
    m = _scrape(port)
    counts = {tuple(v for _, v in k): n for k, n in m["jobq_job_duration_seconds_count"].items()}
    assert counts == {("nap", "default"): 5, ("boom", "risky"): 2, ("slow", "default"): 1}
    sums = {tuple(v for _, v in k): n for k, n in m["jobq_job_duration_seconds_sum"].items()}
    assert 0.25 < sums[("slow", "default")] < 2
    buckets = {(dict(k)["kind"], dict(k)["le"]): n
               for k, n in m["jobq_job_duration_seconds_bucket"].items()}
    assert buckets[("slow", "0.25")] == 0 and buckets[("slow", "0.5")] == 1
    # both runs of the taken job napped 1.5 s (retry --force gives it attempt 1 again)
    assert buckets[("nap", "+Inf")] == 5 and buckets[("nap", "1.0")] == 3
    assert m["jobq_jobs"]  # the queue's gauges are served too
    worker.send_signal(2)
    assert worker.wait(30) == 0, procs.log(worker)
    with pytest.raises(OSError):  # the server ended with the worker
        urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2)


@pytest.mark.slow
def test_a_thousand_half_sent_requests_on_the_metrics_port_do_not_hurt_the_worker(
        app_dir, db, queue):
    """The worker runs with 256 descriptors, as a service may; before the cap, these
    connections took one each (and a thread) until the process pool could fork no child."""
    import os
    import resource
    import subprocess
    import sys

    port = _free_port()
    log = open(app_dir / "worker.log", "w")
    worker = subprocess.Popen(
        [sys.executable, "-m", "jobq_cli.main", "run", "--app", "taskapp", "--pool", "process",
         "--max-jobs-per-child", "1", "--concurrency", "2", "--metrics-port", str(port),
         "--db", db], cwd=app_dir, stdout=log, stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL, env={**os.environ, "PYTHONUNBUFFERED": "1"},
        preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (256, 256)))
    idle = []
    try:
        wait_for(lambda: queue.workers(), timeout=30)
        for _ in range(1000):
            try:
                c = socket.create_connection(("127.0.0.1", port), timeout=5)
                c.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n")
            except OSError:
                continue  # refused or reset: the server is shedding them
            idle.append(c)
        fds = len(os.listdir(f"/proc/{worker.pid}/fd"))
        assert fds < 100, f"the worker holds {fds} descriptors"
        ids = queue.enqueue_many([("nap", {}) for _ in range(6)])
        wait_for(lambda: {queue.get(i).status for i in ids} == {"succeeded"}, timeout=60)
        assert worker.poll() is None, (app_dir / "worker.log").read_text()
        for c in idle:
            c.close()
        wait_for(lambda: b"jobq_jobs" in _get(port), timeout=30)
    finally:
        for c in idle:
            c.close()
        worker.send_signal(2)
        worker.wait(30)
        log.close()
    assert "Traceback" not in (app_dir / "worker.log").read_text()


def _get(port: int) -> bytes:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
            return r.read()
    except OSError:
        return b""


@pytest.mark.slow  # seconds of real time (processes, connections, clocks)
def test_a_taken_metrics_port_stops_jobq_run_before_it_registers(db, queue, procs):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        p = procs.start("run", "--app", "taskapp", "--metrics-port", str(port), "--db", db)
        assert p.wait(30) == 1
    log = procs.log(p).strip().splitlines()
    assert len(log) == 1 and log[0].startswith("jobq: --metrics-port: cannot listen on"), log
    assert queue.workers() == []


def test_the_grafana_dashboard_plots_only_metrics_jobq_serves():
    import re
    from pathlib import Path

    from jobq_core.observability.metric_names import OUTCOMES

    dashboard = json.loads((Path(__file__).parents[2] / "contrib/grafana/jobq.json").read_text())
    exprs = [t["expr"] for p in dashboard["panels"] for t in p["targets"]]
    served = {"jobq_jobs", "jobq_queue_lag_seconds", "jobq_expired_leases", "jobq_workers",
              "jobq_job_outcomes_total", "jobq_job_duration_seconds_bucket"}
    used = {name for e in exprs for name in re.findall(r"\bjobq_[a-z_]+", e)}
    assert used == served
    outcomes = {o for e in exprs for m in re.findall(r'outcome=~"([^"]+)"', e)
                for o in m.split("|")}
    assert outcomes <= set(OUTCOMES)
