"""The Django Tasks backend on a small Django project (tests/djangoapp), on SQLite and
PostgreSQL: an enqueue in a rolled-back atomic block leaves no job; one that commits runs
under ``manage.py jobq_worker``; results, errors and attempts read back; run_after holds a
task back. Each step is a real ``manage.py`` process, as in production."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from jobq_core import JobStatus, Queue

pytestmark = pytest.mark.slow  # every step is a real manage.py process (1-2 s each)

pytest.importorskip("django")
PROJECT = Path(__file__).parent.parent / "djangoapp"
ROOT = Path(__file__).parent.parent.parent


class Site:
    def __init__(self, database: str):
        self.database = database
        self.env = {**os.environ, "JOBQ_DJANGO_DB": database,
                    "PYTHONPATH": os.pathsep.join([str(ROOT), str(PROJECT)])}

    def manage(self, *args: str, timeout: float = 60) -> subprocess.CompletedProcess:
        done = subprocess.run([sys.executable, "manage.py", *args], cwd=PROJECT, env=self.env,
                              capture_output=True, text=True, timeout=timeout)
        assert done.returncode == 0, done.stderr
        return done

    def shell(self, code: str):
        """Run ``code`` in ``manage.py shell``; the JSON it prints last."""
        out = self.manage("shell", "-c", textwrap.dedent(code)).stdout
        return json.loads(out.strip().splitlines()[-1])

    def queue(self) -> Queue:
        return Queue(self.database)


@pytest.fixture(params=["sqlite", "postgres"])
def site(request, tmp_path):
    if request.param == "sqlite":
        s = Site(str(tmp_path / "site.db"))
    else:
        s = Site(request.getfixturevalue("pg_url"))
    s.manage("migrate", "--run-syncdb", "-v", "0")
    return s


def test_an_enqueue_in_a_rolled_back_atomic_block_leaves_no_job(site):
    counts = site.shell("""
        import json
        from django.db import transaction
        from shop.models import Order
        from shop.tasks import ship
        try:
            with transaction.atomic():
                order = Order.objects.create()
                ship.enqueue(order.id)
                raise RuntimeError("rolled back")
        except RuntimeError:
            pass
        print(json.dumps(Order.objects.count()))
    """)
    assert counts == 0
    with site.queue() as q:
        assert q.count() == 0


def test_an_enqueue_that_commits_runs_under_jobq_worker_and_its_result_reads_back(site):
    ids = site.shell("""
        import json
        from django.db import transaction
        from shop.models import Order
        from shop.tasks import ship, notify, double
        with transaction.atomic():
            order = Order.objects.create()
            shipped = ship.enqueue(order.id)
        print(json.dumps({"order": order.id, "ship": shipped.id, "status": shipped.status,
                          "notify": notify.enqueue(order.id, channel="sms").id,
                          "double": double.enqueue(21).id}))
    """)
    assert ids["status"] == "READY"
    with site.queue() as q:
        job = q.get(int(ids["ship"]))
        assert (job.kind, job.queue, job.payload) == (
            "shop.tasks.ship", "default", {"args": [ids["order"]], "kwargs": {}})
        mail = q.get(int(ids["notify"]))
        assert (mail.kind, mail.queue, mail.priority) == ("shop.tasks.notify", "mail", 10)
    started = site.manage("jobq_worker", "--burst", "--concurrency", "2").stderr
    assert "kinds=every Django task of a JobqBackend" in started  # not "kinds=-"
    results = site.shell(f"""
        import json
        from shop.models import Order
        from shop.tasks import ship, notify, double
        out = {{}}
        for task, rid in ((ship, "{ids['ship']}"), (notify, "{ids['notify']}"),
                          (double, "{ids['double']}")):
            r = task.get_result(rid)
            out[task.name] = [r.status, r.return_value, r.attempts, r.is_finished]
        out["state"] = Order.objects.get(id={ids['order']}).state
        print(json.dumps(out))
    """)
    assert results == {"ship": ["SUCCESSFUL", {"shipped": ids["order"]}, 1, True],
                       "notify": ["SUCCESSFUL", f"sms:{ids['order']}", 1, True],
                       "double": ["SUCCESSFUL", 42, 1, True], "state": "shipped"}


def test_errors_and_attempts_read_back_and_refresh_sees_the_change(site):
    out = site.shell("""
        import json, subprocess, sys, time
        from shop.tasks import attempts, broken
        retried, failing = attempts.enqueue(True), broken.enqueue()
        before = [retried.status, failing.status]
        for _ in range(50):  # a retry waits out its backoff (under a second at first)
            subprocess.run([sys.executable, "manage.py", "jobq_worker", "--burst"],
                           check=True, capture_output=True)
            retried.refresh()
            failing.refresh()
            if retried.is_finished and failing.is_finished:
                break
            time.sleep(0.2)
        print(json.dumps({"before": before,
            "retried": [retried.status, retried.return_value, retried.attempts,
                        [e.exception_class_path for e in retried.errors]],
            "failing": [failing.status, failing.attempts,
                        [e.exception_class_path for e in failing.errors],
                        "KeyError: 'always'" in failing.errors[-1].traceback]}))
    """)
    assert out["before"] == ["READY", "READY"]
    # max_attempts=2 in the settings: one retry
    assert out["retried"] == ["SUCCESSFUL", 2, 2, ["builtins.ValueError"]]
    assert out["failing"] == ["FAILED", 2, ["builtins.KeyError", "builtins.KeyError"], True]


def test_run_after_holds_a_task_back_until_its_time(site):
    ids = site.shell("""
        import json
        from datetime import timedelta
        from django.utils import timezone
        from shop.tasks import notify
        at = timezone.now() + timedelta(hours=1)
        later = notify.using(run_after=at).enqueue(1)
        due = notify.using(run_after=timezone.now() - timedelta(seconds=1)).enqueue(2)
        print(json.dumps([later.id, at.timestamp(), due.id]))
    """)
    later, at, due = int(ids[0]), ids[1], int(ids[2])
    with site.queue() as q:
        assert q.get(later).run_at == pytest.approx(at, abs=1e-3)
    site.manage("jobq_worker", "--burst")
    with site.queue() as q:
        assert q.get(due).status is JobStatus.SUCCEEDED
        assert q.get(later).status is JobStatus.PENDING and q.get(later).attempts == 0


def test_an_unknown_result_id_does_not_exist(site):
    out = site.shell("""
        import json
        from django_tasks.exceptions import TaskResultDoesNotExist
        from shop.tasks import ship
        found = []
        for rid in ("999", "not-a-number"):
            try:
                ship.get_result(rid)
            except TaskResultDoesNotExist:
                found.append(False)
        print(json.dumps(found))
    """)
    assert out == [False, False]


def test_a_process_pool_worker_runs_django_tasks_in_its_children(site):
    ids = site.shell("""
        import json
        from shop.tasks import notify, double
        print(json.dumps([notify.enqueue(5).id, double.enqueue(8).id]))
    """)
    site.manage("jobq_worker", "--burst", "--pool", "process", "--concurrency", "2")
    with site.queue() as q:
        assert [q.get(int(i)).result for i in ids] == ["email:5", 16]


def test_drain_runs_django_tasks_in_the_callers_thread(site):
    out = site.shell("""
        import json
        from django_tasks import default_task_backend
        from jobq_core.contrib.django.worker import registry
        from jobq_core.testing import drain
        from shop.tasks import double
        result = double.enqueue(5)
        ran = drain(default_task_backend.queue, registry)
        result.refresh()
        print(json.dumps([[r.kind, r.result] for r in ran] + [result.return_value]))
    """)
    assert out == [["shop.tasks.double", 10], 10]


def test_a_traced_enqueue_in_an_atomic_block_is_the_parent_of_its_run(site):
    pytest.importorskip("opentelemetry.sdk")
    out = site.shell("""
        import json
        from django.db import transaction
        from django_tasks import default_task_backend
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
        from jobq_core.contrib import otel
        from jobq_core.contrib.django.worker import registry
        from jobq_core.testing import drain
        from shop.tasks import double
        exporter = InMemorySpanExporter()
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        otel.instrument(tracer_provider=provider)
        with provider.get_tracer("web").start_as_current_span("POST /double"):
            with transaction.atomic():
                result = double.enqueue(5)
        drain(default_task_backend.queue, registry)
        spans = {s.kind.name: s for s in exporter.get_finished_spans()}
        request, producer, run = spans["INTERNAL"], spans["PRODUCER"], spans["CONSUMER"]
        print(json.dumps([producer.context.trace_id == request.context.trace_id,
                          run.context.trace_id == request.context.trace_id,
                          run.parent.span_id == producer.context.span_id,
                          run.attributes["messaging.message.id"] == result.id]))
    """)
    assert out == [True, True, True, True]


def test_djangos_test_runner_sees_the_jobs_of_a_testcase_and_drops_its_database(site):
    """``manage.py test`` (tests/djangoapp/shop/tests.py): a TestCase's enqueue is seen by
    ``assert_enqueued`` and run by ``drain`` inside the test's transaction; the runner
    then drops its test database, which no connection of jobq's holds open."""
    done = site.manage("test", "shop", "--noinput", "-v", "2", timeout=120)
    assert "Ran 4 tests" in done.stderr and "OK" in done.stderr, done.stderr
    if site.database.startswith("postgresql://"):
        name = site.database.rsplit("/", 1)[1].split("?")[0]
        import psycopg

        with psycopg.connect(site.database) as conn:
            left = conn.execute("SELECT datname FROM pg_database WHERE datname = %s",
                                (f"test_{name}",)).fetchall()
        assert left == []
    else:
        assert not os.path.exists(site.database + ".test")
