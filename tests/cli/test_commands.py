"""The ``jobq`` commands through Typer's runner, on real database files."""
from __future__ import annotations

import importlib.metadata
import json
import os
import time

import pytest
from typer.testing import CliRunner

from jobq_cli.main import app
from jobq_core import Queue
from jobq_core.testing import FakeClock

runner = CliRunner()


def jobq(*args, input=None, env=None):
    return runner.invoke(app, list(args), input=input, env=env, catch_exceptions=False)


def one_line_error(result, contains: str, code: int = 1) -> None:
    """One line on stderr; exit status 1 for an error, 2 (``code``) for a usage error."""
    assert result.exit_code == code, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("jobq: ") and contains in lines[0], result.stderr
    assert "Traceback" not in result.output


# -- enqueue ----------------------------------------------------------------------------

def test_enqueue_prints_the_new_jobs_id_alone_on_stdout(db):
    result = jobq("enqueue", "email.send", '{"to": "ada@example.com"}', "--queue", "mail",
                  "--priority", "5", "--max-attempts", "3", "--db", db)
    assert result.exit_code == 0
    assert result.stdout == "1\n"
    with Queue(db) as q:
        job = q.get(1)
    assert (job.kind, job.payload, job.queue, job.priority, job.max_attempts) == (
        "email.send", {"to": "ada@example.com"}, "mail", 5, 3)


def test_enqueue_uses_the_database_named_by_jobq_db(app_dir):
    path = str(app_dir / "elsewhere.db")
    assert jobq("enqueue", "k", env={"JOBQ_DB": path}).stdout == "1\n"
    assert os.path.exists(path) and not os.path.exists(app_dir / "jobs.db")


def test_enqueue_with_a_delay_and_unique_key_returns_the_live_jobs_id_again(db):
    first = jobq("enqueue", "k", "--unique-key", "u1", "--delay", "60", "--db", db).stdout
    again = jobq("enqueue", "k", "--unique-key", "u1", "--db", db).stdout
    assert first == again == "1\n"
    assert json.loads(jobq("list", "--status", "scheduled", "--json", "--db", db).stdout)[0]["id"] == 1


def test_enqueue_stdin_adds_one_job_per_line_in_batches(db):
    lines = "".join(json.dumps({"payload": {"i": i}, "priority": i % 3}) + "\n" for i in range(1200))
    result = jobq("enqueue", "bulk", "--stdin", "--json", "--db", db, input=lines + "\n")
    assert result.exit_code == 0
    batches = [json.loads(line) for line in result.stdout.splitlines()]  # one per commit
    assert [b["count"] for b in batches] == [500, 500, 200]
    assert [i for b in batches for i in b["ids"]] == list(range(1, 1201))
    with Queue(db) as q:
        assert q.stats().pending == 1200
        assert q.get(7).payload == {"i": 6} and q.get(7).kind == "bulk"


def test_enqueue_stdin_lines_of_kind_and_payload_honour_the_command_line_options(db):
    lines = '{"kind": "a", "payload": [1]}\n{"payload": {"x": "y"}}\n'
    assert jobq("enqueue", "dflt", "--stdin", "--db", db, input=lines).stdout == "1\n2\n"
    assert jobq("enqueue", "dflt", "--stdin", "--queue", "q2", "--priority", "5", "--db", db,
                input=lines).exit_code == 0
    with Queue(db) as q:
        assert [(j.kind, j.payload, j.queue, j.priority) for j in q.list(limit=10)][::-1] == [
            ("a", [1], "default", 0), ("dflt", {"x": "y"}, "default", 0),
            ("a", [1], "q2", 5), ("dflt", {"x": "y"}, "q2", 5)]


def test_enqueue_stdin_with_a_bad_plain_line_writes_nothing(db):
    good = "".join(json.dumps({"kind": "k", "payload": i}) + "\n" for i in range(1500))
    one_line_error(jobq("enqueue", "--stdin", "--db", db, input=good + '{"kind": "k", "payload": NaN}\n'),
                   "stdin line 1501: payload is not JSON-serializable")
    one_line_error(jobq("enqueue", "--stdin", "--db", db, input=good + '{"kind": "", "payload": 1}\n'),
                   "stdin line 1501: kind must be a non-empty string")
    assert not os.path.exists(db)


def test_enqueue_stdin_with_one_bad_line_writes_nothing(db):
    lines = '{"kind": "a"}\n{"kind": "b"}\n{"kind": "c", "priority": "high"}\n'
    one_line_error(jobq("enqueue", "--stdin", "--db", db, input=lines),
                   "stdin line 3: priority must be an integer")
    one_line_error(jobq("enqueue", "--stdin", "--db", db, input='{"kind": "a"}\nnot json\n'),
                   "stdin line 2 is not valid JSON")
    one_line_error(jobq("enqueue", "--stdin", "--db", db, input='{"kind": "a", "color": 1}\n'),
                   "unknown key(s) color")
    assert not os.path.exists(db)


def test_enqueue_with_bad_json_is_a_one_line_error_and_writes_nothing(db):
    one_line_error(jobq("enqueue", "k", "{nope", "--db", db), "PAYLOAD_JSON is not valid JSON",
                   code=2)
    one_line_error(jobq("enqueue", "k", "NaN", "--db", db), "not JSON-serializable")
    assert not os.path.exists(db)


# -- reading ----------------------------------------------------------------------------

@pytest.mark.parametrize("command", [
    ["stats"], ["list"], ["show", "1"], ["workers"], ["retry", "1"], ["cancel", "1"], ["reap"],
    ["prune", "--older-than", "7d"],
])
def test_commands_other_than_enqueue_and_run_never_create_a_missing_database(db, command):
    one_line_error(jobq(*command, "--db", db), "no such database file")
    assert not os.path.exists(db)


def test_stats_json_has_the_documented_keys(db, queue):
    queue.enqueue("k", queue="mail")
    queue.enqueue("k", delay=60)
    data = json.loads(jobq("stats", "--json", "--db", db).stdout)
    assert set(data) == {"now", "window", "pending", "scheduled", "retrying", "running", "dead",
                         "succeeded_recent", "dead_recent", "cancelled_recent", "expired_leases",
                         "oldest_pending_age", "waiting", "queues", "database"}
    assert (data["pending"], data["scheduled"]) == (2, 1)
    assert data["database"]["store"] == "sqlite" and data["database"]["warnings"] == []
    assert set(data["queues"]["mail"]) == {"pending", "running", "dead", "waiting",
                                           "oldest_pending_age", "held", "paused",
                                           "concurrency", "rate", "key_concurrency",
                                           "ordered", "keys_busy", "declared",
                                           "drift"}
    assert [data["queues"]["mail"][k] for k in ("paused", "concurrency", "rate")] == [
        False, None, None]


def test_stats_json_carries_each_queues_controls(db, queue):
    queue.enqueue("k", queue="mail")
    queue.pause("mail")
    queue.set_limit("api", concurrency=3, rate="5/s")
    data = json.loads(jobq("stats", "--json", "--db", db).stdout)["queues"]
    assert (data["mail"]["paused"], data["mail"]["concurrency"]) == (True, None)
    assert (data["api"]["paused"], data["api"]["concurrency"], data["api"]["rate"]) == (
        False, 3, "5/s")


def test_stats_for_people_names_every_queue(db, queue):
    queue.enqueue("k", queue="mail")
    result = jobq("stats", "--db", db)
    assert result.exit_code == 0 and "mail" in result.stdout and "pending" in result.stdout


def test_list_filters_by_status_queue_and_kind_and_limits(db, queue):
    for i in range(5):
        queue.enqueue("a" if i % 2 else "b", queue="q1" if i < 3 else "q2")
    data = json.loads(jobq("list", "--queue", "q1", "--kind", "b", "--json", "--db", db).stdout)
    assert [j["id"] for j in data] == [3, 1]
    assert len(json.loads(jobq("list", "--limit", "2", "--json", "--db", db).stdout)) == 2
    assert set(data[0]) >= {"id", "kind", "queue", "status", "priority", "attempts",
                            "max_attempts", "payload", "result", "error", "run_at", "created_at"}


def test_list_with_an_unknown_status_is_a_one_line_usage_error(db, queue):
    one_line_error(jobq("list", "--status", "done", "--db", db), "unknown status 'done'", code=2)


def test_show_gives_payload_error_and_every_attempt(db, queue):
    job_id = queue.enqueue("k", {"x": 1}, max_attempts=1)
    job = queue.claim("w1")
    queue.fail(job.id, job.token, "Traceback (most recent call last):\nValueError: bad")
    data = json.loads(jobq("show", str(job_id), "--json", "--db", db).stdout)
    assert data["status"] == "dead" and data["payload"] == {"x": 1}
    assert data["history"][0]["outcome"] == "failed" and "ValueError: bad" in data["history"][0]["error"]
    human = jobq("show", str(job_id), "--db", db).stdout
    assert "ValueError: bad" in human and "dead" in human


def test_show_of_a_job_that_does_not_exist_is_a_one_line_error(db, queue):
    one_line_error(jobq("show", "42", "--db", db), "no job with id 42")


def test_database_text_is_shown_literally_never_as_markup_or_terminal_escapes(db, queue):
    job_id = queue.enqueue("[bold red]kind[/]\x1b]52;c;SGVsbG8=\x07", {"x": "\x1b[2J"})
    for args in (["list"], ["show", str(job_id)]):
        out = jobq(*args, "--db", db).stdout
        assert "\x1b" not in out and "\x07" not in out
        assert "[bold red]kind" in out and "␛" in out


def test_workers_lists_registered_workers(db, queue):
    queue.register_worker("w-1", host="h", pid=123, queues=["mail"], concurrency=4)
    data = json.loads(jobq("workers", "--json", "--db", db).stdout)
    assert data[0]["id"] == "w-1" and data[0]["queues"] == ["mail"] and data[0]["concurrency"] == 4
    assert set(data[0]) == {"id", "host", "pid", "queues", "concurrency", "busy", "started_at",
                            "last_seen", "last_seen_ago", "state", "beat_interval", "lease",
                            "pool", "children", "leader"}
    assert (data[0]["state"], data[0]["beat_interval"]) == ("ok", None)


# -- administering ----------------------------------------------------------------------

def _dead_job(queue, kind="k"):
    job_id = queue.enqueue(kind, max_attempts=1)
    job = queue.claim("w")
    queue.fail(job.id, job.token, "boom")
    return job_id


def test_retry_puts_one_dead_job_back_to_pending(db, queue):
    job_id = _dead_job(queue)
    assert json.loads(jobq("retry", str(job_id), "--json", "--db", db).stdout) == {"retried": 1}
    assert queue.get(job_id).status == "pending"


def test_retry_all_dead_retries_every_dead_job_of_a_kind(db, queue):
    a, b, c = _dead_job(queue, "a"), _dead_job(queue, "a"), _dead_job(queue, "b")
    assert jobq("retry", "--all-dead", "--kind", "a", "--db", db).stdout == "retried 2 job(s)\n"
    assert [queue.get(i).status for i in (a, b, c)] == ["pending", "pending", "dead"]


def test_retry_needs_exactly_one_of_an_id_and_all_dead(db, queue):
    one_line_error(jobq("retry", "--db", db), "give a job ID or --all-dead", code=2)
    one_line_error(jobq("retry", "1", "--all-dead", "--db", db), "give a job ID or --all-dead",
                   code=2)


def test_retry_of_a_pending_job_is_a_one_line_error(db, queue):
    queue.enqueue("k")
    one_line_error(jobq("retry", "1", "--db", db), "only dead or cancelled jobs can be retried")


def test_cancel_of_a_pending_job_cancels_it_and_of_a_running_one_flags_it(db, queue):
    pending = queue.enqueue("k", priority=-1)
    running = queue.enqueue("k")
    queue.claim("w")
    assert json.loads(jobq("cancel", str(pending), "--json", "--db", db).stdout) == {
        "id": pending, "status": "cancelled"}
    assert "asked to stop" in jobq("cancel", str(running), "--db", db).stdout
    assert queue.get(running).cancel_requested


def test_reap_returns_jobs_whose_lease_ran_out(db):
    with Queue(db, clock=FakeClock(time.time() - 60)) as q:  # claimed a minute ago
        q.enqueue("k")
        q.claim("w", lease=30)
    assert json.loads(jobq("reap", "--json", "--db", db).stdout) == {"reaped": 1}


def _finished_at(db, when: float, kind: str) -> int:
    """A job that ran and succeeded at ``when`` (Unix seconds); its id."""
    with Queue(db, clock=FakeClock(when)) as q:
        job_id = q.enqueue(kind)
        job = q.claim("w")
        q.complete(job.id, job.token)
    return job_id


def test_prune_deletes_finished_jobs_older_than_the_duration_but_never_the_newest(db, queue):
    now = time.time()
    old = [_finished_at(db, now - 10 * 86400, "old") for _ in range(2)]
    with Queue(db, clock=FakeClock(now - 8 * 86400)) as q:
        old.append(_dead_job(q))
    recent = _finished_at(db, now - 3600, "recent")
    pending = queue.enqueue("waiting")
    newest = _finished_at(db, now - 30 * 86400, "newest")  # finished long ago, but the newest
    assert json.loads(jobq("prune", "--older-than", "7d", "--dry-run", "--json", "--db", db
                           ).stdout) == {"pruned": 0, "dry_run": True, "dead_kept": 1,
                                         "by_status": {"succeeded": 2, "cancelled": 0}}
    assert json.loads(jobq("prune", "--older-than", "7d", "--dead", "--json", "--db", db
                           ).stdout) == {"pruned": 3, "dry_run": False, "dead_kept": 0,
                                         "by_status": {"succeeded": 2, "dead": 1,
                                                       "cancelled": 0}}
    assert [queue.get(i) for i in old] == [None, None, None]
    assert queue.get(recent).status == "succeeded" and queue.get(pending).status == "pending"
    assert jobq("prune", "--older-than", "7d", "--db", db).stdout == (
        "deleted 0 job(s) finished over 7d00h ago (0 succeeded, 0 cancelled)\n")
    assert jobq("prune", "--older-than", "30m", "--db", db).stdout == (
        "deleted 1 job(s) finished over 30m ago (1 succeeded, 0 cancelled)\n")
    assert queue.get(recent) is None and queue.get(pending).status == "pending"
    assert queue.get(newest).status == "succeeded"  # kept: its id must never be handed out again


def test_prune_reads_a_bare_number_as_seconds(db, queue):
    now = time.time()
    old = _finished_at(db, now - 100, "old")  # older than 7 s, younger than 7 min
    young = _finished_at(db, now - 3, "young")
    queue.enqueue("newest")
    assert json.loads(jobq("prune", "--older-than", "7", "--json", "--db", db).stdout) == {
        "pruned": 1, "dry_run": False, "by_status": {"succeeded": 1, "cancelled": 0},
        "dead_kept": 0}
    assert queue.get(old) is None and queue.get(young).status == "succeeded"


@pytest.mark.parametrize("duration", ["7x", "-1d", "d", ""])
def test_prune_with_a_bad_duration_is_a_one_line_error(db, queue, duration):
    _finished_at(db, time.time() - 86400, "old")
    queue.enqueue("newest")
    one_line_error(jobq("prune", "--older-than", duration, "--db", db), "bad duration", code=2)
    assert queue.count() == 2  # nothing was pruned


# -- run --------------------------------------------------------------------------------

def test_run_burst_processes_ready_jobs_and_exits_zero(db, queue, app_dir):
    log = str(app_dir / "runs.txt")
    for _ in range(10):
        queue.enqueue("record", {"log": log})
    result = jobq("run", "--app", "taskapp", "--burst", "--concurrency", "3", "--db", db)
    assert result.exit_code == 0, result.output
    assert queue.stats().succeeded_recent == 10
    assert "succeeded" in result.stderr


def test_run_with_an_attribute_name_uses_that_registry(db, queue):
    queue.enqueue("nap", {})
    assert jobq("run", "--app", "taskapp:other_name", "--burst", "--db", db).exit_code == 0
    assert queue.get(1).status == "succeeded"


@pytest.mark.parametrize("ref, message, code", [
    ("no_such_module", "cannot import 'no_such_module': no such module", 1),
    ("taskapp:missing", "module 'taskapp' has no attribute 'missing'", 1),
    ("taskapp:not_a_registry", "taskapp:not_a_registry is a int, not a jobq Registry", 1),
    ("bad-name", "--app must look like MODULE or MODULE:ATTR", 2),
])
def test_run_with_a_bad_app_exits_with_a_clear_error_before_claiming_anything(db, queue, ref,
                                                                                message, code):
    queue.enqueue("nap", {})
    one_line_error(jobq("run", "--app", ref, "--burst", "--db", db), message, code)
    assert queue.get(1).status == "pending" and queue.workers() == []


def test_tui_on_a_missing_database_fails_in_one_line_without_creating_it(db):
    one_line_error(runner.invoke(app, ["tui", "--db", db]), "no such database file")
    assert not os.path.exists(db)


@pytest.mark.parametrize("args, message", [
    (["--interval", "soon"], "bad duration 'soon'"), (["--bogus"], "unrecognized arguments"),
])
def test_tui_with_a_bad_monitor_option_is_a_one_line_usage_error(db, queue, args, message):
    one_line_error(runner.invoke(app, ["tui", "--db", db, *args]), message, code=2)


def test_version_prints_the_installed_version():
    result = jobq("--version")
    assert result.exit_code == 0
    assert result.stdout == f"jobq {importlib.metadata.version('jobq')}\n"


def test_without_db_or_jobq_db_the_database_is_jobs_db_in_the_current_directory(app_dir):
    assert json.loads(jobq("enqueue", "k", "--json").stdout) == {"id": 1, "existing": False}
    assert (app_dir / "jobs.db").exists()
    assert json.loads(jobq("list", "--json").stdout)[0]["kind"] == "k"


def test_run_with_a_bad_synchronous_mode_is_a_one_line_error(db, queue):
    one_line_error(jobq("run", "--app", "taskapp", "--synchronous", "sometimes", "--db", db),
                   "--synchronous must be NORMAL or FULL", code=2)


def test_run_at_synchronous_full_processes_jobs(db, queue, app_dir):
    job_id = queue.enqueue("record", {"log": str(app_dir / "runs.txt")})
    result = jobq("run", "--app", "taskapp", "--burst", "--synchronous", "full", "--db", db)
    assert result.exit_code == 0, result.output
    assert queue.get(job_id).status == "succeeded"
