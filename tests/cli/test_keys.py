"""``jobq enqueue --key``, ``jobq limit --key-concurrency / --ordered`` and what ``jobq
queues`` and ``jobq why`` show of them."""
from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from jobq_cli.main import app

runner = CliRunner()


def jobq(*args):
    return runner.invoke(app, list(args), catch_exceptions=False, env={"COLUMNS": "160"})


def test_enqueue_key_stores_the_key_and_show_prints_it(db, queue):
    result = jobq("enqueue", "sync", "--key", "customer:7", "--queue", "api", "--db", db)
    assert result.exit_code == 0, result.output
    job_id = int(result.stdout)
    assert queue.get(job_id).key == "customer:7"
    assert json.loads(jobq("show", str(job_id), "--json", "--db", db).stdout)["key"] == \
        "customer:7"
    assert "customer:7" in jobq("show", str(job_id), "--db", db).stdout
    after = jobq("enqueue", "next", "--key", "customer:7", "--after", str(job_id), "--db", db)
    assert queue.get(int(after.stdout)).key == "customer:7"


def test_limit_sets_key_limits_keeping_the_others_and_queues_shows_them(db, queue):
    queue.set_limit("api", concurrency=5)
    result = jobq("limit", "api", "--key-concurrency", "2", "--db", db, "--json")
    assert json.loads(result.stdout) == {"queue": "api", "concurrency": 5, "rate": None,
                                         "key_concurrency": 2, "ordered": False}
    queue.enqueue_many([{"kind": "k", "queue": "api", "key": k} for k in "aab"])
    queue.claim_many("w", 10, queues=["api"])
    [row] = json.loads(jobq("queues", "--db", db, "--json").stdout)
    assert {k: row[k] for k in ("key_concurrency", "ordered", "keys_busy", "running")} == {
        "key_concurrency": 2, "ordered": False, "keys_busy": 2, "running": 3}
    assert "≤5 running · ≤2 per key (2 keys busy)" in jobq("queues", "--db", db).stdout
    said = jobq("limit", "api", "--ordered", "--db", db).stdout
    assert said == "queue 'api': concurrency 5, key concurrency 2, ordered by key\n"
    assert "ordered by key (2 keys busy)" in jobq("queues", "--db", db).stdout
    jobq("limit", "api", "--unordered", "--db", db)
    assert queue.queues()["api"].ordered is False
    jobq("limit", "api", "--clear", "--ordered", "--db", db)
    api = queue.queues()["api"]
    assert (api.concurrency, api.key_concurrency, api.ordered) == (None, None, True)


def test_why_says_a_key_is_held(db, queue):
    queue.set_limit("api", key_concurrency=1)
    first, second = queue.enqueue_many([{"kind": "k", "queue": "api", "key": "c7"}] * 2)
    queue.claim("w", queues=["api"])
    data = json.loads(jobq("why", str(second), "--json", "--db", db).stdout)
    assert data["reason"] == "key_held" and data["message"] == \
        f"'c7' held by job {first} (1/1 running)"
    assert f"held by job {first}" in jobq("why", str(second), "--db", db).stdout


@pytest.mark.parametrize("args, message", [
    (["limit", "api", "--key-concurrency", "0"], "--key-concurrency must be at least 1"),
    (["limit", "api", "--key-concurrency", "two"], "Invalid value for '--key-concurrency'"),
    (["enqueue", "k", "--key", ""], "--key must be a non-empty string"),
    (["enqueue", "k", "--key", "x" * 300], "--key must be at most 255 bytes"),
])
def test_bad_key_options_are_one_line_usage_errors_and_write_nothing(db, queue, args, message):
    result = jobq(*args, "--db", db)
    assert result.exit_code == 2 and message in result.stderr, result.output
    assert result.stderr.count("\n") == 1
    assert queue.count() == 0 and queue.queues() == {}


def test_enqueue_stdin_lines_carry_their_key_and_key_is_their_default(db, queue):
    lines = '{"kind": "a", "key": "c1"}\n{"kind": "b"}\n'
    result = runner.invoke(app, ["enqueue", "--stdin", "--key", "c0", "--db", db], input=lines)
    assert result.exit_code == 0, result.output
    ids = [int(line) for line in result.stdout.split()]
    assert [queue.get(i).key for i in ids] == ["c1", "c0"]
    bad = runner.invoke(app, ["enqueue", "--stdin", "--db", db], input='{"kind": "a", "key": ""}\n')
    assert bad.exit_code == 1 and "stdin line 1: key must be a non-empty string" in bad.stderr
