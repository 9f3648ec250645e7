"""Limits declared in code, from the shell, on both stores: ``jobq run`` applies its app's
``registry.queue`` limits, ``jobq queues`` (and ``--json``) shows the code's beside the
database's when an operator changed them, and ``jobq limit --code`` sets the code's again."""
from __future__ import annotations

import json
import os
import textwrap

import pytest
from typer.testing import CliRunner

from jobq_cli.main import app

runner = CliRunner()

APP = textwrap.dedent('''\
    import os
    from jobq_core import Registry

    registry = Registry()
    registry.queue("mail", concurrency=int(os.environ.get("MAIL_CONCURRENCY", "5")),
                   rate="100/m")


    @registry.task("send", queue="mail")
    def send(payload):
        return None
    ''')


def jobq(*args: str):
    return runner.invoke(app, list(args), catch_exceptions=False, env={"COLUMNS": "120"})


@pytest.fixture(params=["sqlite", "postgresql"])
def target(request, db):
    return db if request.param == "sqlite" else request.getfixturevalue("pg_url")


def run_worker(procs, target: str, app_dir, concurrency: int = 5) -> str:
    (app_dir / "limitsapp.py").write_text(APP)
    os.environ["MAIL_CONCURRENCY"] = str(concurrency)
    try:
        p = procs.start("run", "--app", "limitsapp", "--burst", "--db", target)
    finally:
        os.environ.pop("MAIL_CONCURRENCY", None)
    assert p.wait(60) == 0, procs.log(p)
    return procs.log(p)


def queues_json(target: str) -> dict:
    result = jobq("queues", "--db", target, "--json")
    assert result.exit_code == 0, result.output
    return {q["queue"]: q for q in json.loads(result.output)}


@pytest.mark.slow  # worker processes
def test_jobq_run_applies_the_declared_limits_and_jobq_queues_shows_an_operator_change(
        target, procs, app_dir):
    log = run_worker(procs, target, app_dir)
    assert "queue mail: limits set as the code declares (≤5 running · 100/m)" in log
    mail = queues_json(target)["mail"]
    assert (mail["concurrency"], mail["rate"], mail["drift"]) == (5, "100/m", False)
    assert mail["declared"] == {"concurrency": 5, "rate": "100/m", "key_concurrency": None,
                                "ordered": False}

    assert jobq("limit", "mail", "--concurrency", "1", "--db", target).exit_code == 0
    mail = queues_json(target)["mail"]
    assert (mail["concurrency"], mail["drift"], mail["declared"]["concurrency"]) == (1, True, 5)
    table = jobq("queues", "--db", target).output
    assert "≤1 running · 100/m  ≠ code: ≤5 running · 100/m" in table

    log = run_worker(procs, target, app_dir)  # the same code again: the change holds
    assert "its limits (≤1 running · 100/m) differ from the code's" in log
    assert queues_json(target)["mail"]["concurrency"] == 1

    result = jobq("limit", "mail", "--code", "--db", target)
    assert result.exit_code == 0 and "≤5 running · 100/m, as the code declares" in result.output
    assert queues_json(target)["mail"]["drift"] is False
    assert "≠ code" not in jobq("queues", "--db", target).output

    run_worker(procs, target, app_dir, concurrency=7)  # a deploy with other limits
    mail = queues_json(target)["mail"]
    assert (mail["concurrency"], mail["drift"]) == (7, False)


def test_jobq_limit_code_needs_a_declaration_and_goes_alone(db):
    result = jobq("limit", "sms", "--code", "--db", db)
    assert result.exit_code == 1
    assert result.output.strip().splitlines() == [
        "jobq: no code declares the limits of queue 'sms' (a worker records those of its "
        "registry when it starts)"]
    result = jobq("limit", "sms", "--code", "--concurrency", "2", "--db", db)
    assert result.exit_code == 2 and "--code sets the code's limits: give it alone" in result.output


def test_jobq_stats_json_has_the_declared_limits_beside_each_queue_s(db):
    from jobq_core import Queue, QueueLimits

    with Queue(db) as q:
        q.declare_limits({"mail": QueueLimits(concurrency=5)})
        q.set_limit("mail", concurrency=2)
    result = jobq("stats", "--db", db, "--json")
    mail = json.loads(result.output)["queues"]["mail"]
    assert (mail["concurrency"], mail["drift"]) == (2, True)
    assert mail["declared"] == {"concurrency": 5, "rate": None, "key_concurrency": None,
                                "ordered": False}
