"""``jobq enqueue --after``, ``jobq show``'s dependencies and ``jobq stats``' waiting count."""
from __future__ import annotations

import json

from typer.testing import CliRunner

from jobq_cli.main import app

runner = CliRunner()


def jobq(*args):
    return runner.invoke(app, list(args), catch_exceptions=False, env={"COLUMNS": "100"})


def test_enqueue_after_stores_a_waiting_job_that_show_links_both_ways(db, queue):
    a = queue.enqueue("fetch")
    result = jobq("enqueue", "parse", "--after", str(a), "--db", db)
    assert result.exit_code == 0, result.output
    b = int(result.stdout)
    assert queue.get(b).status == "waiting"
    shown = jobq("show", str(b), "--db", db).stdout
    assert "waits on" in shown and f"{a} fetch (pending)" in shown
    data = json.loads(jobq("show", str(a), "--db", db, "--json").stdout)
    assert data["waited_by"] == [{"id": b, "kind": "parse", "status": "waiting",
                                  "allow_failed": False}]
    assert json.loads(jobq("stats", "--db", db, "--json").stdout)["waiting"] == 1
    assert [j["id"] for j in json.loads(
        jobq("list", "--status", "waiting", "--db", db, "--json").stdout)] == [b]


def test_allow_failed_goes_with_after_and_bad_ids_are_usage_errors(db, queue):
    a = queue.enqueue("fetch")
    ok = jobq("enqueue", "x", "--after", f"{a},{a}", "--allow-failed", "--db", db, "--json")
    assert ok.exit_code == 0 and queue.dependencies(json.loads(ok.stdout)["id"]).waits_on[
        0].allow_failed
    for args, message in ((["--after", "1,x"], "--after takes job ids"),
                          (["--after", ""], "--after takes job ids"),
                          (["--allow-failed"], "--allow-failed goes with --after")):
        result = jobq("enqueue", "x", *args, "--db", db)
        assert result.exit_code == 2 and message in result.stderr
        assert result.stderr.count("\n") == 1


def test_after_a_job_that_does_not_exist_stores_nothing_and_exits_1(db, queue):
    before = queue.count()
    result = jobq("enqueue", "x", "--after", "4711", "--db", db)
    assert result.exit_code == 1 and "no job with id 4711" in result.stderr
    assert queue.count() == before


def test_why_says_the_reason_in_one_line_and_in_json(db, queue):
    a = queue.enqueue("fetch")
    b = queue.enqueue("parse", after=[a])
    result = jobq("why", str(b), "--db", db)
    assert result.exit_code == 0
    assert result.stdout == f"job {b}: waiting: it waits on jobs {a} (pending)\n"
    data = json.loads(jobq("why", str(a), "--db", db, "--json").stdout)
    assert (data["id"], data["reason"]) == (a, "no_worker") and "message" in data
    missing = jobq("why", "4711", "--db", db)
    assert missing.exit_code == 1 and "no job with id 4711" in missing.stderr
